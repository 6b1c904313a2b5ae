"""What ``transformer.lm.train`` writes to metrics.json: the data, the curriculum in words, validation, the
induction curve and when a head first reached 0.4, the training's steps, time and device, the command, and
the layer choices of the model it trained."""

from __future__ import annotations

import platform
import shlex
import sys

import numpy as np
import torch

from .train_state import TrainState


def curriculum_text(stages: list[tuple[int, int]], ids) -> str | None:
    """What the curriculum did, in words, for metrics.json."""
    if not stages:
        return None
    parts = ", then ".join(f"{steps} steps on {length}-token rows" for length, steps in stages)
    return (
        f"first {parts}, each row uniform random ids in [{ids[0]}, {ids[1]}) with a span written twice; "
        "then the mix above"
    )


def first_above(curve: list[dict], threshold: float) -> dict | None:
    for point in curve:
        if point["max"] >= threshold:
            return {"step": point["step"], "tokens": point["tokens"], "seconds": point["seconds"]}
    return None


def build_metrics(args, corpus, streams, val_streams, validation, state: TrainState, model, stages) -> dict:
    """metrics.json of a finished training: data, tokenizer, validation, the induction curve, steps,
    time, device, the command and the layer choices; ``stages``: the curriculum's (length, steps)."""
    curve, step, seconds = state.curve, state.step, state.seconds
    final = np.asarray(curve[-1]["scores"])
    layer, head = np.unravel_index(int(final.argmax()), final.shape)
    ids = list(args.random_ids) if args.random_ids else [3, args.vocab_size]
    return {
        "task": "next-token prediction on movie reviews (English IMDB train split + Korean NSMC-style train file)",
        "data": {
            "english": "aclImdb train/ (pos + neg), <br /> as spaces",
            "korean": "nsmc_style_train.tsv.gz document column",
            "validation": "2% of each language's documents, chosen by a hash of the text; never trained on",
            "documents": corpus.sizes(),
            "train_tokens": {k: int(len(v)) for k, v in streams.items()},
            "val_tokens": {k: int(len(v)) for k, v in val_streams.items()},
            "batches": "half English, half Korean windows of the context length",
            "repeated_spans": (
                f"{args.repeat_share:.0%} of each batch's rows start with a span of 10 to {args.context // 2 - 1} "
                f"tokens written twice ({args.random_share:.0%} of spans uniform random ids, the rest review text), "
                "added so induction heads form within the budget"
            ),
            "curriculum": curriculum_text(stages, ids),
        },
        "tokenizer": f"byte-level BPE ({args.vocab_size} tokens) learned on both languages' training documents",
        "metric_names": {"loss": "mean next-token cross-entropy, nats per BPE token", "perplexity": "exp(loss)"},
        "validation": validation,
        "validation_windows_per_language": args.val_windows,
        "induction": {
            "probe": f"16 sequences: <|endoftext|> then 40 uniform random token ids in [{ids[0]}, {ids[1]}), the same "
            "40 again; score = mean attention from each token of the second copy to the token after its first "
            "occurrence (max_all_ids: the same with ids from the whole vocabulary)",
            "probe_ids": ids,
            "final": np.round(final, 4).tolist(),
            "best_head": {"layer": int(layer), "head": int(head), "score": round(float(final.max()), 4)},
            "first_step_at_or_above_0.4": first_above(curve, 0.4),
            "curve": curve,
        },
        "steps": step,
        "tokens_seen": step * args.batch * args.context,
        "parameters": sum(p.numel() for p in model.parameters()),
        "training_seconds": round(seconds, 1),
        "device": f"cpu, {args.threads} thread(s), torch {torch.__version__}, {platform.machine()}",
        "command": "python -m transformer.lm.train " + shlex.join(sys.argv[1:]),
        "initialised_from": args.init_from,
        "resumed_at_steps": state.resumed_at,
        "layers": layer_summary(model.config),
    }


def layer_summary(config) -> dict:
    """The layer choices of the trained model, for metrics.json."""
    return {
        "positional": config.positional,
        "rotary": {"style": config.rotary_style, "fraction": config.rotary_fraction, "base": config.pe_base}
        if config.positional == "rotary"
        else None,
        "norm": "RMSNorm" if config.norm_style == "rms" else "LayerNorm",
        "feed_forward": "SwiGLU" if config.gated_ffn else config.activation.upper() + " MLP",
        "output_layer": "tied to the input embedding" if config.tie_output_embedding else "its own",
        "heads": config.num_heads,
        "kv_heads": config.kv_heads,
        "biases": config.qkv_bias,
        "local_layers": {"layers": list(config.local_layers), "window": config.local_window}
        if config.local_layers
        else None,
    }
