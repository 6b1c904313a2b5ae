"""An imported bert-base-sized model in our engine against ``transformers`` (the reference):
one 128-token analysis with every head's weights.

Run: python bench/bench_hf.py [--tokens 128] [--rounds 15] [--calls 2] [--out FILE]

A BertForSequenceClassification with random weights (12 layers, 12 heads, d 768, d_ff 3072,
vocabulary 30522), saved with ``save_pretrained`` and imported by ``transformer.hf`` (the weights
are the same tensors in both). One input of ``--tokens`` ids, eval, no gradients, one thread:
- ``ours``: ``analyze``'s forward, every layer's and head's weights written into one
  (1, L, H, T, T) float32 buffer (``weights_buffer``), logits;
- ``transformers_eager``: ``attn_implementation="eager"``, ``output_attentions=True`` (sdpa
  returns no weights), logits.
CPU time per call (``time.thread_time``), interleaved: each round runs both ``--calls`` times in a
rotating order so load from other jobs falls on both alike. Reports the median and the 10th-90th
percentile per stack and the median of the per-round ratios ours / transformers. The weights and
logits agree within 1e-5 (checked, printed). The machine is shared: numbers are noisy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np
import torch
from shared import ROOT, call_ms

from transformer.core.attention import weights_buffer
from transformer.hf import load_hf_folder
from transformer.hf.tokenizer_files import DEFAULT_SPECIALS

OUT = ROOT / "bench" / "results" / "hf_bert_base.json"


def make_folder(folder: Path, vocab_size: int = 30522):
    import transformers as T

    torch.manual_seed(0)
    config = T.BertConfig(vocab_size=vocab_size, num_labels=2)  # bert-base sizes by default
    model = T.BertForSequenceClassification(config)
    model.save_pretrained(folder)
    specials = list(DEFAULT_SPECIALS["wordpiece"].values())
    words = specials + [f"w{i}" for i in range(vocab_size - len(specials))]
    (folder / "vocab.txt").write_text("".join(w + "\n" for w in words), encoding="utf-8")
    return T.BertForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()


def ours(loaded, ids: torch.Tensor, encoder_only: bool = False):
    """(every head's weights (1, L, H, T, T), the logits or, ``encoder_only``, the last token states)."""
    cfg = loaded.config
    buffer = weights_buffer(1, cfg.num_layers, cfg.num_heads, ids.shape[1], ids.shape[1])
    out = loaded.model(ids, need_weights=True, weights_out=buffer)
    return buffer, out.encoder.hidden if encoder_only else out.logits


def theirs(reference, ids: torch.Tensor, encoder_only: bool = False):
    """``ours`` from the transformers model ``reference`` (eager attention)."""
    out = reference(ids, output_attentions=True)
    return torch.stack(out.attentions, dim=1), out.last_hidden_state if encoder_only else out.logits


def parse_args(doc: str, out: Path) -> argparse.Namespace:
    """The options both comparisons take: --tokens, --rounds, --calls, --out."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument("--out", default=str(out))
    return parser.parse_args()


def main() -> None:
    args = parse_args(__doc__, OUT)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        reference = make_folder(Path(tmp))
        loaded = load_hf_folder(tmp)
        ids = torch.randint(5, 30522, (1, args.tokens))
        a, la = ours(loaded, ids)
        b, lb = theirs(reference, ids)
        diff = {"attention": float((a - b).abs().max()), "logits": float((la - lb).abs().max())}
        print("max abs diff", diff)
        stacks = {"ours": lambda: ours(loaded, ids), "transformers_eager": lambda: theirs(reference, ids)}
        summary = interleaved(stacks, args.rounds, args.calls)
    result = {
        "model": "BertForSequenceClassification, random weights, 12 layers, 12 heads, d 768, d_ff 3072",
        "tokens": args.tokens,
        "threads": 1,
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "cpu_ms_per_call": summary,
        "max_abs_diff": diff,
        "torch": torch.__version__,
        "note": "CPU time per call (thread_time), interleaved rounds; shared 2-core machine, numbers are noisy",
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


def interleaved(stacks: dict, rounds: int, calls: int) -> dict:
    """CPU ms per call of ``stacks`` {"ours": fn, "transformers_eager": fn}: each round runs both ``calls`` times
    in a rotating order so load from other jobs falls on both alike; the median and 10th-90th percentile per
    stack, and of the per-round ratios ours / transformers (``ratio_ours_over_transformers``)."""
    times = {name: [] for name in stacks}
    ratios = []
    for r in range(rounds):
        names = list(stacks)[r % 2 :] + list(stacks)[: r % 2]
        got = {name: [] for name in stacks}
        for _ in range(calls):
            for name in names:
                got[name].append(call_ms(stacks[name]))
        for name in stacks:
            times[name] += got[name]
        ratios.append(statistics.median(got["ours"]) / statistics.median(got["transformers_eager"]))
    summary = {name: _spread(values) for name, values in times.items()}
    summary["ratio_ours_over_transformers"] = _spread(ratios, digits=3)
    return summary


def _spread(values: list[float], digits: int = 1) -> dict:
    p10, p90 = np.percentile(values, [10, 90])
    return {"median": round(statistics.median(values), digits), "p10": round(p10, digits), "p90": round(p90, digits)}


if __name__ == "__main__":
    main()
