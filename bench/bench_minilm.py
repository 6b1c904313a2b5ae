"""The real pretrained encoder all-MiniLM-L6-v2 (assets/models/all-minilm-l6-v2, the published weights) in our
engine against ``transformers`` eager with attentions: one 128-token analysis with every head's weights.

Run: python bench/bench_minilm.py [--tokens 128] [--rounds 15] [--calls 2] [--out FILE]

The same text (a review cut by the model's own tokenizer to ``--tokens`` ids, [CLS] and [SEP] included) in both;
CPU time per call (``time.thread_time``), one thread, interleaved rounds in a rotating order so load from other
jobs falls on both alike (bench_hf.py's method). Reports the median and 10th-90th percentile per stack and the
median of the per-round ratios ours / transformers; the attention weights and token states agree within 1e-5
(checked, printed). The machine is shared: numbers are noisy.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from bench_hf import interleaved, ours, parse_args, theirs
from shared import ROOT

from transformer.hf import load_hf_folder

FOLDER = ROOT / "assets" / "models" / "all-minilm-l6-v2"
OUT = ROOT / "bench" / "results" / "minilm_vs_transformers.json"
TEXT = (
    "I expected this film to be another dull remake, but it was not bad at all: the acting is warm, the jokes "
    "land, and the last half hour is as gripping as anything I have seen this year. "
)


def main() -> None:
    import transformers as T

    args = parse_args(__doc__, OUT)
    torch.set_num_threads(1)
    loaded = load_hf_folder(FOLDER)
    reference = T.BertModel.from_pretrained(FOLDER, attn_implementation="eager").eval()
    encoded = loaded.text_encoder().encode(TEXT * 8, max_len=args.tokens)
    ids = torch.tensor([encoded.ids])
    with torch.no_grad():
        a, ha = ours(loaded, ids, encoder_only=True)
        b, hb = theirs(reference, ids, encoder_only=True)
        diff = {"attention": float((a - b).abs().max()), "token_states": float((ha - hb).abs().max())}
        print("max abs diff", diff)
        stacks = {
            "ours": lambda: ours(loaded, ids, encoder_only=True),
            "transformers_eager": lambda: theirs(reference, ids, encoder_only=True),
        }
        summary = interleaved(stacks, args.rounds, args.calls)
    result = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 as published (6 layers, 12 heads, d 384, d_ff 1536)",
        "tokens": len(encoded.ids),
        "threads": 1,
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "cpu_ms_per_call": summary,
        "max_abs_diff": diff,
        "torch": torch.__version__,
        "transformers": T.__version__,
        "note": "CPU time per call (thread_time), interleaved rounds; shared 2-core machine, numbers are noisy",
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
