"""Decoding speed: ms per generated token at 8, 32 and 128 output tokens, with and without the
key/value cache, against ``nn.Transformer`` decoding the same way PyTorch's tutorials do.

Run: python bench/bench_decoding.py [--model assets/models/en-ko-order] [--lengths 8 32 128]
     [--rounds 5] [--out FILE] [--device cpu|cuda]

The bundled translation model's weights (d_model 64, 4 heads, 2 + 2 layers), its table of
sinusoids made long enough for 129 target positions, one example source sentence, one thread, CPU
time per generated token (``time.thread_time``; with ``--device cuda`` wall time to
``torch.cuda.synchronize()``), interleaved rounds (median and 10th-90th percentile):
- ``greedy_cached``: ``EncoderDecoder`` greedy steps feeding one new id each (the cache), no weights;
- ``greedy_uncached``: the same re-running every decoder layer over the whole prefix each step
  (the code before the cache, kept here as the reference);
- ``step_view``: ``translation.decode``, the Translate page's step view (every step's self- and
  cross-attention rows and probabilities), with the cache; a teacher of n tokens makes it run n steps;
- ``torch_transformer``: ``nn.Transformer`` with the same sizes (post-norm, ReLU), the memory
  computed once and the decoder re-run over the prefix each step (PyTorch's decoder keeps no
  keys or values between calls, so that is how it decodes incrementally).
Every path runs exactly n steps (an end token does not stop them); cached and uncached must choose
the same tokens (checked).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics

import numpy as np
import torch
from shared import call_ms
from torch import nn

from transformer import load_model
from transformer.core.model import EncoderDecoder, build_model
from transformer.core.positional import sinusoidal_encoding
from transformer.translation import get_task
from transformer.translation.decode import DecodeOptions, decode
from transformer.translation.vocab import source_ids

TASKS = {"en-ko-order": "word-order", "dates": "dates"}


def longer(loaded, length: int):
    """The bundle with room for ``length`` target positions (same weights, longer sinusoids)."""
    config = loaded.config.replace(max_len=max(length, loaded.config.max_len))
    model = build_model(config).eval().to(next(loaded.model.parameters()).device)
    model.load_state_dict(loaded.model.state_dict())
    return dataclasses.replace(loaded, model=model, config=config)


@torch.no_grad()
def greedy(model: EncoderDecoder, src: torch.Tensor, steps: int, cached: bool) -> list[int]:
    """``steps`` greedy steps, never stopping at the end token; cached or re-running the prefix."""
    memory = model.encoder(src).hidden
    keep = src != model.config.pad_id
    tgt = torch.tensor([[model.config.bos_id]], device=src.device)
    cache = {"cache": model.decoder.new_cache()} if cached else {}  # no keyword at all for older code
    for _ in range(steps):
        y, _, _ = model.decoder(tgt[:, -1:] if cached else tgt, memory, keep, **cache)
        tgt = torch.cat([tgt, model.generator(y[:, -1]).argmax(-1, keepdim=True)], dim=1)
    return tgt[0].tolist()


class TorchSeq2Seq(nn.Module):
    """nn.Transformer with embeddings, sinusoids and a generator of the same sizes (random weights)."""

    def __init__(self, cfg) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.tgt_emb = nn.Embedding(cfg.target_vocab_size, cfg.d_model)
        self.register_buffer("pe", torch.from_numpy(sinusoidal_encoding(cfg.max_len, cfg.d_model)))
        self.core = nn.Transformer(
            cfg.d_model, cfg.num_heads, cfg.num_layers, cfg.num_decoder_layers, cfg.d_ff, dropout=0.0,
            batch_first=True,
        )  # fmt: skip
        self.generator = nn.Linear(cfg.d_model, cfg.target_vocab_size)

    def embed(self, emb: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        return emb(ids) * self.cfg.d_model**0.5 + self.pe[: ids.shape[1]]

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, steps: int) -> list[int]:
        memory = self.core.encoder(self.embed(self.src_emb, src))
        tgt = torch.tensor([[self.cfg.bos_id]], device=src.device)
        for _ in range(steps):
            mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=src.device)
            y = self.core.decoder(self.embed(self.tgt_emb, tgt), memory, tgt_mask=mask, tgt_is_causal=True)
            tgt = torch.cat([tgt, self.generator(y[:, -1]).argmax(-1, keepdim=True)], dim=1)
        return tgt[0].tolist()


def run(loaded, src_ids: list[int], steps: int, rounds: int, reference: TorchSeq2Seq) -> dict:
    model = loaded.model
    src = torch.tensor([src_ids], device=next(model.parameters()).device)
    teacher = tuple([loaded.config.bos_id] * steps)  # any n ids: the step view then runs n steps
    paths = {
        "greedy_cached": lambda: greedy(model, src, steps, True),
        "greedy_uncached": lambda: greedy(model, src, steps, False),
        "step_view": lambda: decode(loaded, src_ids, DecodeOptions(teacher=teacher, max_new=steps)),
        "torch_transformer": lambda: reference.greedy(src, steps),
    }
    if not hasattr(model.decoder, "new_cache"):  # the code before the cache (run from an older checkout)
        del paths["greedy_cached"]
    elif greedy(model, src, steps, True) != greedy(model, src, steps, False):
        raise SystemExit(f"cached and uncached greedy decoding chose different tokens at {steps} steps")
    if len(decode(loaded, src_ids, DecodeOptions(teacher=teacher, max_new=steps)).steps) != steps:
        raise SystemExit("the step view did not run the asked number of steps")
    for fn in paths.values():
        fn()  # warm-up
    times = {name: [] for name in paths}
    names = list(paths)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(call_ms(paths[name], src.device.type) / steps)
    out = {"output_tokens": steps}
    for name, values in times.items():
        out[name] = {
            "ms_per_token": round(statistics.median(values), 3),
            "p10": round(float(np.percentile(values, 10)), 3),
            "p90": round(float(np.percentile(values, 90)), 3),
        }
    base = out["torch_transformer"]["ms_per_token"]
    for name in paths:
        out[name]["ratio_to_torch"] = round(out[name]["ms_per_token"] / base, 2)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="assets/models/en-ko-order")
    p.add_argument("--lengths", type=int, nargs="+", default=[8, 32, 128])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=None, help="write the results as JSON here")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = p.parse_args()
    torch.set_num_threads(1)
    loaded = longer(load_model(args.model, args.device), max(args.lengths) + 1)
    torch.manual_seed(0)
    reference = TorchSeq2Seq(loaded.config).eval().to(args.device)
    task = get_task(TASKS[loaded.name])
    src_ids = source_ids(loaded.vocab, task.examples()[0])
    print(f"model {args.model} ({len(src_ids)} source tokens), {torch.get_num_threads()} thread(s)")
    rows = [run(loaded, src_ids, n, args.rounds, reference) for n in args.lengths]
    for row in rows:
        cells = ", ".join(
            f"{name} {row[name]['ms_per_token']:.2f} ({row[name]['p10']:.2f}-{row[name]['p90']:.2f}, "
            f"x{row[name]['ratio_to_torch']:.2f})"
            for name in ("greedy_cached", "greedy_uncached", "step_view", "torch_transformer")
            if name in row
        )
        print(f"{row['output_tokens']:4d} output tokens, ms per token: {cells}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
            json.dump({"model": args.model, "torch": torch.__version__, "device": device, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
