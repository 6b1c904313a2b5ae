"""Time the first draw of each view of the Residual page on the bundled language model, at 128 tokens.

Run: python bench/bench_residual.py [--repeats 3]
Each view is drawn by AppTest (the whole script run: the shell, the page, the computation, the
figures) for a text it has not seen before (the heads view: 16 new sentences of 20-35 words), so
nothing comes from the cache but the loaded model;
the engine's own time (the computation alone) is printed beside it. Medians of ``--repeats`` runs,
wall-clock time and this process's CPU time (what the draw costs whatever else shares the machine).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import torch

from tests.app_helpers import open_app
from transformer.bundle import load_bundle
from transformer.core.bpe_text import encode_prompt
from transformer.residual import contributions, head_effects, logit_lens
from transformer.residual.head_space import layer_vectors, project

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the movie was great but the plot felt thin and the actors were not bad at all".split()


def text_of(seed: int, words: int = 160) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def page_times(repeats: int) -> dict[str, list[tuple[float, float]]]:
    at = open_app("residual")  # the model loaded once, as on a running server
    times: dict[str, list[float]] = {}
    seed = 0
    for view in ("lens", "contributions", "ablation", "heads", "compare"):
        for _ in range(repeats):
            seed += 1
            at.session_state["rs_view"] = "contributions" if view == "ablation" else view
            at.session_state["rs_mode"] = "ablation" if view == "ablation" else "direct"
            at.session_state["rs_text"] = text_of(seed)
            at.session_state["rs_compare_text"] = text_of(seed)
            at.session_state["rs_source"] = "pasted"  # 16 sentences not seen before
            at.session_state["rs_pasted"] = "\n".join(text_of(1000 * seed + i, 20 + i) for i in range(16))
            start, cpu = time.perf_counter(), time.process_time()
            at.run()
            times.setdefault(view, []).append((time.perf_counter() - start, time.process_time() - cpu))
            assert not at.exception, [e.value for e in at.exception]
    return times


def engine_times(repeats: int) -> dict[str, list[tuple[float, float]]]:
    loaded = load_bundle(ROOT / "assets" / "models" / "review-lm")
    model = loaded.model.eval()
    times: dict[str, list[float]] = {}
    for seed in range(repeats):
        ids = torch.tensor([encode_prompt(loaded.lm_tokenizer, text_of(100 + seed), 128).ids])
        sentences = [ids[0, : 20 + i].tolist() for i in range(16)]  # 16 sentences of 20-35 tokens
        cases = {
            "lens": (logit_lens, (model, ids)),
            "contributions": (contributions, (model, ids)),
            "ablation": (head_effects, (model, ids, -1, 5)),
            "heads (16 sentences)": (head_space, (model, sentences)),
        }
        for name, (fn, args) in cases.items():
            start, cpu = time.perf_counter(), time.process_time()
            fn(*args)
            times.setdefault(name, []).append((time.perf_counter() - start, time.process_time() - cpu))
    return times


def head_space(model, sentences):
    def run(x):
        return model(x, need_weights=True).attention

    return project(*layer_vectors(model, sentences, 1, run, causal=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"tokens per input: {len(encode_prompt(load_bundle(ROOT / 'assets/models/review-lm').lm_tokenizer, text_of(1), 128).ids)}"
    )
    for where, found in (("engine", engine_times(args.repeats)), ("page", page_times(args.repeats))):
        for name, values in found.items():
            wall, cpu = (1000 * statistics.median(v[i] for v in values) for i in (0, 1))
            print(f"{where:7s} {name:22s} wall {wall:8.1f} ms   CPU {cpu:8.1f} ms")


if __name__ == "__main__":
    main()
