"""The engine against PyTorch's fused kernels: inference with every head's weights vs
``nn.TransformerEncoder``'s fast path and plain ``F.scaled_dot_product_attention`` layers.

Run: python bench/bench_engine.py [--lengths 128 512 1024] [--rounds 15] [--calls 3] [--out FILE]
     [--device cpu|cuda] [--d-model 64 --heads 4 --layers 2 --d-ff 256]

The same weights in each stack (by default d_model 64, 4 heads, 2 layers, d_ff 256; a BERT-sized
stack is --d-model 768 --heads 12 --layers 12 --d-ff 3072; post-norm ReLU, eval, no gradients,
one thread), fed the same embeddings (our ``Encoder`` takes them as
``token_embeddings``, with no positional encoding):
- ``ours_weights``: our encoder returning every head's weights, written into one new
  (B, L, H, T, T) float32 buffer per call (``weights_buffer``), as ``analyze`` does;
- ``ours_weights_reused_buffer``: the same writing into one buffer kept across calls (the
  arithmetic alone, without the first touch of new memory);
- ``ours_no_weights``: our encoder through the fused kernel, no weights;
- ``torch_fast``: ``nn.TransformerEncoder`` (its fast path) without a mask;
- ``torch_fast_all_false_mask``: the same given an all-False ``src_key_padding_mask`` (the old
  comparison, kept for reference: the mask slows PyTorch down);
- ``sdpa_layers``: a plain layer around ``F.scaled_dot_product_attention`` (packed QKV), no weights;
- ``sdpa_layers_then_writing_weights``: the same, and then a new (B, L, H, T, T) float32 buffer
  filled with a constant: SDPA's time plus only the memory any engine returning every head's
  weights must write (no exponentials, no reading back), a lower bound for such an engine
  built on these kernels.
Padded batches (8 inputs of T/4 .. T tokens) compare ``ours_weights`` with the fast path given
its padding mask (nested tensors, the default).

CPU time per call (``time.thread_time``); with ``--device cuda``, wall time per call from launch
to ``torch.cuda.synchronize()`` (the GPU's work included), TF32 off. Interleaved: each round runs every stack ``--calls``
times in a rotating order, so load from other jobs falls on all of them alike. Reports the median
and the 10th-90th percentile per stack, and the ratio to ``torch_fast`` (median of the per-round
ratios, with their 10th-90th percentile). Outputs agree within 1e-4 (checked, printed).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from shared import call_ms
from torch import nn

from transformer.core.config import ModelConfig
from transformer.core.masks import key_padding_from, padding_mask
from transformer.core.model import Encoder

try:
    from transformer.core.attention import weights_buffer
except ImportError:  # a checkout from before the engine work (for the "before" numbers): no buffer
    weights_buffer = None

PAD, WORD = 1, 5  # ids: our encoder reads its padding mask from them


@dataclass(frozen=True)
class Stack:
    """The sizes of the stacks compared, and where they run."""

    d_model: int = 64
    heads: int = 4
    layers: int = 2
    d_ff: int = 256
    device: str = "cpu"


def build(dims: Stack, seed: int = 0) -> tuple[Encoder, nn.TransformerEncoder, nn.TransformerEncoder]:
    """(our encoder, nn.TransformerEncoder without and with nested tensors), the same weights."""
    torch.manual_seed(seed)
    D, H, L, FF = dims.d_model, dims.heads, dims.layers, dims.d_ff
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.1, batch_first=True)
    ref = nn.TransformerEncoder(layer, L, enable_nested_tensor=False).eval()
    nested = nn.TransformerEncoder(layer, L, enable_nested_tensor=True).eval()
    nested.load_state_dict(ref.state_dict())
    cfg = ModelConfig(
        vocab_size=8,
        pad_id=PAD,
        d_model=D,
        num_heads=H,
        d_ff=FF,
        num_layers=L,
        dropout=0.1,
        positional="none",
        max_len=4096,
    )
    ours = Encoder(cfg).eval()
    with torch.no_grad():
        for mine, theirs in zip(ours.layers, ref.layers):
            attn = theirs.self_attn
            for lin, w, b in zip(
                (mine.self_attn.w_q, mine.self_attn.w_k, mine.self_attn.w_v),
                attn.in_proj_weight.chunk(3),
                attn.in_proj_bias.chunk(3),
            ):
                lin.weight.copy_(w)
                lin.bias.copy_(b)
            mine.self_attn.w_o.load_state_dict(attn.out_proj.state_dict())
            mine.ffn.linear1.load_state_dict(theirs.linear1.state_dict())
            mine.ffn.linear2.load_state_dict(theirs.linear2.state_dict())
            mine.attn_block.norm.load_state_dict(theirs.norm1.state_dict())
            mine.ffn_block.norm.load_state_dict(theirs.norm2.state_dict())
    return ours.to(dims.device), ref.to(dims.device), nested.to(dims.device)


def ours_forward(encoder: Encoder, x: torch.Tensor, ids: torch.Tensor, buffer: torch.Tensor | str | None):
    """Our encoder over embeddings x (B, T, D); ``buffer``: None (no weights), "new" (a new
    (B, L, H, T, T) buffer, as analyze makes) or a tensor to reuse."""
    if weights_buffer is None:  # older code: each layer returns its own weights
        return encoder(ids, buffer is not None, token_embeddings=x).hidden
    if isinstance(buffer, str):
        attn = encoder.layers[0].self_attn
        size = (ids.shape[0], len(encoder.layers), attn.num_heads, ids.shape[1], ids.shape[1])
        buffer = weights_buffer(*size, device=ids.device)
    return encoder(ids, buffer is not None, token_embeddings=x, weights_out=buffer).hidden


def sdpa_forward(ref: nn.TransformerEncoder, x: torch.Tensor) -> torch.Tensor:
    """A plain post-norm layer around F.scaled_dot_product_attention, with ``ref``'s weights."""
    b, t, d = x.shape
    for layer in ref.layers:
        attn = layer.self_attn
        qkv = F.linear(x, attn.in_proj_weight, attn.in_proj_bias).view(b, t, 3, attn.num_heads, attn.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, T, d_k)
        context = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)
        x = layer.norm1(x + attn.out_proj(context))
        x = layer.norm2(x + layer.linear2(F.relu(layer.linear1(x))))
    return x


def sdpa_then_writing_weights(ref: nn.TransformerEncoder, x: torch.Tensor, size: tuple[int, ...]) -> torch.Tensor:
    """``sdpa_forward``, then a new weights-sized buffer (B, L, H, T, T) written once."""
    out = sdpa_forward(ref, x)
    weights_buffer(*size, device=x.device).fill_(1.0 / size[-1])
    return out


def interleaved(stacks: dict, rounds: int, calls: int, device: str = "cpu") -> dict[str, list[list[float]]]:
    """{name: per round, the ms of each call}; the order of the stacks rotates every round."""
    names = list(stacks)
    for fn in stacks.values():  # warm-up
        fn()
    times = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            times[name].append([call_ms(stacks[name], device) for _ in range(calls)])
    return times


def summary(times: dict[str, list[list[float]]], anchor: str) -> dict:
    """Median and 10th-90th percentile per stack; ratio to ``anchor`` per round (median of the
    round's calls over the anchor's), as a median and 10th-90th percentile."""
    out = {}
    for name, per_round in times.items():
        flat = [t for r in per_round for t in r]
        ratios = [statistics.median(a) / statistics.median(b) for a, b in zip(per_round, times[anchor])]
        out[name] = {
            "median_ms": round(statistics.median(flat), 3),
            "p10_ms": round(float(np.percentile(flat, 10)), 3),
            "p90_ms": round(float(np.percentile(flat, 90)), 3),
            "ratio_to_" + anchor: round(statistics.median(ratios), 3),
            "ratio_p10": round(float(np.percentile(ratios, 10)), 3),
            "ratio_p90": round(float(np.percentile(ratios, 90)), 3),
        }
    return out


@torch.no_grad()
def single_input(ours, ref, dims: Stack, length: int, rounds: int, calls: int) -> dict:
    dev = dims.device
    x = torch.randn(1, length, dims.d_model, device=dev)
    ids = torch.full((1, length), WORD, device=dev)  # nothing blocked
    all_false = torch.zeros(1, length, dtype=torch.bool, device=dev)
    kept = torch.empty(1, dims.layers, dims.heads, length, length, device=dev)
    stacks = {
        "ours_weights": lambda: ours_forward(ours, x, ids, "new"),
        "ours_weights_reused_buffer": lambda: ours_forward(ours, x, ids, kept),
        "ours_no_weights": lambda: ours_forward(ours, x, ids, None),
        "torch_fast": lambda: ref(x),
        "torch_fast_all_false_mask": lambda: ref(x, src_key_padding_mask=all_false),
        "sdpa_layers": lambda: sdpa_forward(ref, x),
    }
    if weights_buffer is not None:
        size = (1, dims.layers, dims.heads, length, length)
        stacks["sdpa_layers_then_writing_weights"] = lambda: sdpa_then_writing_weights(ref, x, size)
    diff = max(float((stacks[name]() - ref(x)).abs().max()) for name in ("ours_weights", "sdpa_layers"))
    if diff > 1e-4:
        raise SystemExit(f"outputs differ by {diff:.2e} at {length} tokens")
    timed = summary(interleaved(stacks, rounds, calls, dev), "torch_fast")
    return {"tokens": length, "max_abs_diff": diff, **timed}


@torch.no_grad()
def padded_batch(ours, nested, dims: Stack, length: int, rounds: int, calls: int, batch: int = 8) -> dict:
    dev = dims.device
    lengths = np.linspace(length // 4, length, batch).astype(int)
    ids = torch.full((batch, length), PAD, device=dev)
    for row, n in enumerate(lengths):
        ids[row, :n] = WORD
    mask = padding_mask(ids, PAD)
    x = torch.randn(batch, length, dims.d_model, device=dev)
    kept = torch.empty(batch, dims.layers, dims.heads, length, length, device=dev)
    stacks = {
        "ours_weights": lambda: ours_forward(ours, x, ids, "new"),
        "ours_weights_reused_buffer": lambda: ours_forward(ours, x, ids, kept),
        "ours_no_weights": lambda: ours_forward(ours, x, ids, None),
        "torch_fast_padding_mask": lambda: nested(x, src_key_padding_mask=key_padding_from(mask)),
    }
    keep = ids != PAD
    ref_out = stacks["torch_fast_padding_mask"]()
    diff = float((stacks["ours_weights"]()[keep] - ref_out[keep]).abs().max())
    if diff > 1e-4:
        raise SystemExit(f"padded outputs differ by {diff:.2e} at {length} tokens")
    timed = summary(interleaved(stacks, rounds, calls, dev), "torch_fast_padding_mask")
    return {"tokens": length, "batch": batch, "lengths": lengths.tolist(), "max_abs_diff": diff, **timed}


def hardware(dims: Stack) -> str:
    if dims.device == "cuda":
        return torch.cuda.get_device_name()
    return platform.processor() or platform.machine()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 1024])
    p.add_argument("--padded-lengths", type=int, nargs="+", default=[128, 512])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--out", default=None, help="write the results as JSON here")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-ff", type=int, default=256)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 products as on the CPU (PyTorch's default)
    dims = Stack(args.d_model, args.heads, args.layers, args.d_ff, args.device)
    ours, ref, nested = build(dims)
    results = {"config": {**asdict(dims), "threads": 1}, "torch": torch.__version__, "hardware": hardware(dims)}
    results["single"] = [single_input(ours, ref, dims, n, args.rounds, args.calls) for n in args.lengths]
    results["padded"] = [padded_batch(ours, nested, dims, n, args.rounds, args.calls) for n in args.padded_lengths]
    for block in results["single"] + results["padded"]:
        label = f"{block['tokens']} tokens" + (f", batch of {block['batch']}" if "batch" in block else "")
        print(label)
        for name, s in block.items():
            if isinstance(s, dict):
                ratio = next(v for k, v in s.items() if k.startswith("ratio_to_"))
                print(f"  {name:26s} {s['median_ms']:8.2f} ms ({s['p10_ms']:.2f}-{s['p90_ms']:.2f})  "
                      f"x{ratio:.2f} ({s['ratio_p10']:.2f}-{s['ratio_p90']:.2f})")  # fmt: skip
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
