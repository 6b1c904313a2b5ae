"""Exact match of the bundled translation models per input format on held-out pairs, and how
often their out-of-depth inputs are flagged (transformer.translation.checks).

dates: every format of transformer.translation.dates.FORMATS (held-out (year, month) pairs),
the issue's probes (ISO, slashes, dots, two-digit years, years 1900-2099), impossible dates
and non-dates. word order: sentence shapes on held-out subject-verb pairs, nouns in the role
the first lexicon never gave them, and perturbed sentences (a leading "yes ,", shuffled order,
an unknown noun, an extra word).

Run: python bench/bench_translation_formats.py [--per-format 300] [--out bench/results/translation_formats.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer import analyze, load_model  # noqa: E402
from transformer.translation import dates, word_order  # noqa: E402
from transformer.translation import lexicon as lx  # noqa: E402
from transformer.translation.checks import check  # noqa: E402
from transformer.translation.evaluate import held_out_groups, scores_by_group  # noqa: E402
from transformer.translation.tasks import get_task  # noqa: E402
from transformer.translation.vocab import build_vocabs  # noqa: E402

PROBES = {  # the inputs: text -> ISO
    "2021-03-03": "2021-03-03", "2021/3/3": "2021-03-03", "03.03.2021": "2021-03-03", "3/3/21": "2021-03-03",
    "3.3.21": "2021-03-03", "march 3 2021": "2021-03-03", "1 january 1900": "1900-01-01",
    "december 31 , 2099": "2099-12-31", "the 4th of july , 1905": "1905-07-04", "2099/12/31": "2099-12-31",
}  # fmt: skip
IMPOSSIBLE = ["february 30 , 2021", "2021-02-29", "31.04.2020", "2021/13/1", "june 31 , 1999"]
VERBS = {e for e, _ in lx.VERBS}
NOT_DATES = ["hello world", "the cat reads a letter", "tomorrow", "12345", "march"]


def translate(loaded, texts: list[str], joiner: str) -> list[tuple[list[str], list[bool], str]]:
    """(tokens, unknown, greedy output text) per input."""
    result = analyze(loaded, texts)
    out = []
    for i in range(len(texts)):
        words = [w for w in result.decoder_tokens[i] if w not in ("<bos>", "<eos>", "<pad>")]
        out.append((result.tokens[i], result.unknown[i], joiner.join(words)))
    return out


def flagged_share(task: str, loaded, texts: list[str], joiner: str) -> float:
    runs = translate(loaded, texts, joiner)
    return sum(not check(task, t, u, o if task == "dates" else None).reliable for t, u, o in runs) / len(texts)


def dates_report(loaded, per_format: int, seed: int) -> dict:
    task = get_task("dates")
    model, vocabs = loaded.model, build_vocabs(task)
    by_format = scores_by_group(model, vocabs, held_out_groups("dates", per_format, seed))
    probes = dict(zip(PROBES, (o for _, _, o in translate(loaded, list(PROBES), ""))))
    rng = random.Random(seed)
    years = [dt.date(y, rng.randint(1, 12), rng.randint(1, 28)) for y in range(1900, 2100, 7)]
    texts = [dates.make_pair(d, rng.choice(dates.WRITTEN[:9] + dates.NUMERIC[:5])).text for d in years]
    outputs = translate(loaded, texts, "")
    return {
        "exact_match_by_format": by_format,
        "issue_probes": {text: {"output": out, "right": out == PROBES[text]} for text, out in probes.items()},
        "years_1900_2099_every_7th": sum(o == d.isoformat() for (_, _, o), d in zip(outputs, years)) / len(years),
        "impossible_dates_flagged": flagged_share("dates", loaded, IMPOSSIBLE, ""),
        "non_dates_flagged": flagged_share("dates", loaded, NOT_DATES, ""),
        "held_out_pairs_flagged": flagged_share(
            "dates", loaded, [p.text for p in dates.generate(300, seed, "test")], ""
        ),
    }


def perturbed(pairs, rng: random.Random) -> dict[str, list[str]]:
    shuffled = []
    for p in pairs:
        words = list(p.source)
        while words == list(p.source):
            rng.shuffle(words)
        shuffled.append(" ".join(words))
    return {
        "leading 'yes ,'": ["yes , " + p.text for p in pairs],
        "shuffled word order": shuffled,
        "unknown noun (zebra) as subject": [" ".join(_with_subject(p.source, "zebra")) for p in pairs],
        "extra word at the end ('the')": [p.text + " the" for p in pairs],
    }  # fmt: skip


def _with_subject(source: tuple[str, ...], noun: str) -> list[str]:
    verb = next(i for i, w in enumerate(source) if w in VERBS)
    return [*source[: verb - 1], noun, *source[verb:]]


def word_order_report(loaded, per_group: int, seed: int) -> dict:
    task = get_task("word-order")
    by_group = scores_by_group(loaded.model, build_vocabs(task), held_out_groups("word-order", per_group, seed))
    pairs = word_order.generate(200, seed, "test")
    flagged = {
        name: flagged_share("word-order", loaded, texts, " ")
        for name, texts in perturbed(pairs, random.Random(seed)).items()
    }
    flagged["held-out sentences (should be 0)"] = flagged_share("word-order", loaded, [p.text for p in pairs], " ")
    return {"exact_match_by_format": by_group, "flagged_as_unreliable": flagged}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-format", type=int, default=300)
    p.add_argument("--seed", type=int, default=777)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "translation_formats.json"))
    args = p.parse_args()
    torch.set_num_threads(1)
    report = {
        "dates": dates_report(load_model(ROOT / "assets" / "models" / "dates"), args.per_format, args.seed),
        "word-order": word_order_report(
            load_model(ROOT / "assets" / "models" / "en-ko-order"), 10 * args.per_format, args.seed
        ),
        "command": "python bench/bench_translation_formats.py " + " ".join(sys.argv[1:]),
    }
    Path(args.out).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    for name, part in report.items():
        if isinstance(part, dict):
            print(f"== {name}")
            for group, s in part["exact_match_by_format"].items():
                print(f"  {s['exact_match']:.4f}  ({s['pairs']:5d})  {group}   e.g. {s['example']}")
            for key, value in part.items():
                if key != "exact_match_by_format":
                    print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
