"""Command line: ``python -m transformer {inspect,train,evaluate} --help``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .analysis import analyze
from .devices import resolve_device
from .export import analysis_json
from .loader import ImportOptions, load_model

DESCRIPTION = """Attention Lab's model package.

  inspect   run text through a model and print tokens, prediction and every
            layer's per-head attention as JSON
  train     train the IMDB sentiment classifier (see: python -m transformer train --help)
  evaluate  score a bundled classifier on an IMDB split

Example:
  python -m transformer inspect --checkpoint assets/models/imdb-sentiment \\
      --text "the movie was great" --format json
"""


def inspect_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m transformer inspect",
        description="Run text through a model; print one JSON object with tokens, ids, prediction and "
        "attention (layers x heads x T x T per input, softmax weights after masking).",
    )
    p.add_argument(
        "--checkpoint",
        required=True,
        metavar="PATH",
        help="a bundled-model folder (e.g. assets/models/imdb-sentiment), its .zip, or a checkpoint "
        "file (.pt/.pth/.bin state_dict or dict holding one, .safetensors)",
    )
    p.add_argument("--vocab", metavar="FILE", help="vocabulary for a foreign checkpoint: vocab.txt or a JSON list")
    p.add_argument("--heads", type=int, help="number of attention heads (a foreign checkpoint cannot say)")
    p.add_argument("--pooling", choices=["mean", "first", "max"], help="classifier pooling of a foreign checkpoint")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU) | cpu | cuda | mps")
    p.add_argument("--max-len", type=int, help="truncate inputs to this many tokens (default: the model's)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", nargs="+", metavar="TEXT", help="one or more input texts")
    src.add_argument("--text-file", metavar="FILE", help="UTF-8 file with one input per line")
    p.add_argument(
        "--target", nargs="+", metavar="TEXT", help="decoder inputs for encoder-decoder models (teacher-forced)"
    )
    p.add_argument("--target-vocab", metavar="FILE", help="target-side vocabulary of an encoder-decoder checkpoint")
    p.add_argument("--format", default="json", choices=["json"], help="output format (json)")
    return p


def read_texts(args: argparse.Namespace) -> list[str]:
    if args.text is not None:
        return args.text
    path = Path(args.text_file)
    if not path.is_file():
        raise ValueError(f"--text-file {path}: no such file.")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise ValueError(f"--text-file {path} is not UTF-8 text ({err.reason} at byte {err.start}).") from err
    texts = [line for line in lines if line.strip()]
    if not texts:
        raise ValueError(f"--text-file {path} has no non-empty lines.")
    return texts


def run_inspect(argv: list[str]) -> int:
    args = inspect_parser().parse_args(argv)
    try:
        texts = read_texts(args)
        device = resolve_device(args.device)
        options = ImportOptions(
            vocab_path=args.vocab, num_heads=args.heads, pooling=args.pooling, target_vocab_path=args.target_vocab
        )
        loaded = load_model(args.checkpoint, device, options)
        if args.max_len is not None and args.max_len < 1:
            raise ValueError("--max-len must be at least 1.")
        result = analyze(loaded, texts, args.max_len, args.target)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(analysis_json(loaded, result))
    sys.stdout.write("\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(DESCRIPTION)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "inspect":
        return run_inspect(rest)
    if command == "train":
        from .train import main as train_main

        return train_main(rest)
    if command == "evaluate":
        from .evaluate import main as evaluate_main

        return evaluate_main(rest)
    print(f"error: unknown command {command!r}; use inspect, train or evaluate (see --help).", file=sys.stderr)
    return 2
