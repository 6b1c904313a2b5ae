"""The language model's layer choices on the command line of ``transformer.lm.train``: positions
(learned, sinusoidal, rotary), normalisation (LayerNorm, RMSNorm), feed-forward (GELU MLP, SwiGLU),
key/value heads (grouped-query attention) and biases, turned into the config's fields."""

from __future__ import annotations

import argparse

from ..core.config import ROTARY_STYLES


def add_layer_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("layers (the defaults are the first bundled model's GPT-2-like recipe)")
    group.add_argument("--positional", choices=("learned", "sinusoidal", "rotary"), default="learned")
    group.add_argument(
        "--rotary-style", choices=ROTARY_STYLES, default="halves", help="which dimensions rotate as pairs"
    )
    group.add_argument("--rotary-fraction", type=float, default=1.0, help="share of each head's dimensions rotated")
    group.add_argument("--rope-base", type=float, default=10000.0, help="rotary base θ")
    group.add_argument("--norm", choices=("layer", "rms"), default="layer", help="LayerNorm or RMSNorm")
    group.add_argument("--ffn", choices=("mlp", "swiglu"), default="mlp", help="GELU MLP or SwiGLU")
    group.add_argument("--kv-heads", type=int, default=0, help="key/value heads (grouped-query attention; 0: --heads)")
    group.add_argument("--no-bias", action="store_true", help="no biases in attention and feed-forward layers")
    group.add_argument(
        "--local-window",
        type=int,
        default=0,
        help="keys a local layer's query sees, itself included (a sliding window; 0: no local layers)",
    )
    group.add_argument(
        "--local-layers", type=int, nargs="+", default=[0], help="which layers are local (0-based; with --local-window)"
    )
    group.add_argument(
        "--untied-output",
        action="store_true",
        help="an output layer of its own instead of the input embedding (Llama 2/3, Mistral; SmolLM ties them)",
    )


def layer_options(args: argparse.Namespace) -> dict:
    """The config fields that ``args``' layer choices set (for ``lm_config``)."""
    options = {"positional": args.positional, "num_kv_heads": args.kv_heads}
    if args.positional == "rotary":
        options.update(rotary_style=args.rotary_style, rotary_fraction=args.rotary_fraction, pe_base=args.rope_base)
    if args.norm == "rms":
        options["norm_style"] = "rms"
    if args.ffn == "swiglu":
        options.update(gated_ffn=True, activation="silu")
    if args.no_bias:
        options.update(qkv_bias=False, out_bias=False, ffn_bias=False)
    if args.untied_output:
        options["tie_output_embedding"] = False
    if args.local_window:
        options.update(local_window=args.local_window, local_layers=tuple(args.local_layers))
    return options
