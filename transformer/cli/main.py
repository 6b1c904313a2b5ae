"""Command line: ``python -m transformer {inspect,attribute,train,evaluate} --help``.

Every failure prints one ``error:`` line on stderr saying what to do, and exits with status 2.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from ..checkpoints.options import ImportOptions
from ..core.devices import resolve_device

DESCRIPTION = """Attention Lab's model package.

  inspect    run text through a model and print tokens, prediction and every
             layer's per-head attention as JSON (streamed; --format jsonl for one line per input)
  attribute  per-token attributions of a classifier's prediction: attention rollout,
             gradient x input and integrated gradients, as JSON
  train      train the IMDB sentiment classifier (see: python -m transformer train --help)
  evaluate   score a bundled classifier on an IMDB split
  lab        train a small Transformer on a toy task (copy, reverse, sort, induction)
             and print one JSON line (held-out accuracy, induction score, steps, seconds)

Example:
  python -m transformer inspect --checkpoint assets/models/imdb-sentiment \\
      --text "the movie was great" --text "not good" --format json
"""
EXIT_ERROR = 2


def add_model_options(p: argparse.ArgumentParser) -> None:
    """--checkpoint and what a foreign checkpoint cannot say about itself."""
    p.add_argument(
        "--checkpoint",
        metavar="PATH",
        help="a bundled-model folder (e.g. assets/models/imdb-sentiment), its .zip, a Hugging Face model folder "
        "(config.json + weights + tokenizer files), or a checkpoint file (.pt/.pth/.bin state_dict or dict "
        "holding one, .safetensors)",
    )
    p.add_argument(
        "--hub",
        metavar="NAME",
        help="instead of --checkpoint: a Hugging Face Hub model by name (e.g. bert-base-uncased), downloaded "
        "once into your Hugging Face cache (BERT, RoBERTa, DistilBERT, ELECTRA, GPT-2; at most 1 GB of weights)",
    )
    p.add_argument("--vocab", metavar="FILE", help="vocabulary for a foreign checkpoint: vocab.txt or a JSON list")
    p.add_argument("--heads", type=int, help="number of attention heads (a foreign checkpoint cannot say)")
    p.add_argument("--pooling", choices=["mean", "first", "max"], help="classifier pooling of a foreign checkpoint")
    p.add_argument(
        "--positional",
        choices=["none", "sinusoidal"],
        help="positional encoding your code added when none is saved in the checkpoint (default: the family's "
        "usual choice: none for PyTorch nn.Transformer models, the sinusoid for the others)",
    )
    p.add_argument("--pe-base", type=float, metavar="BASE", help="base of the sinusoid (default 10000)")
    p.add_argument(
        "--scale-embedding",
        choices=["yes", "no"],
        help="whether your code multiplied token embeddings by sqrt(d_model) (default: the family's usual choice)",
    )
    p.add_argument("--bos", metavar="TOKEN", help="start token of an encoder-decoder's target side")
    p.add_argument("--eos", metavar="TOKEN", help="end token of an encoder-decoder's target side")
    p.add_argument("--target-vocab", metavar="FILE", help="target-side vocabulary of an encoder-decoder checkpoint")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU) | cpu | cuda | mps")
    p.add_argument("--max-len", type=int, help="truncate inputs to this many tokens (default: the model's)")


def add_text_options(p: argparse.ArgumentParser, required: bool = True) -> None:
    src = p.add_mutually_exclusive_group(required=required)
    src.add_argument(
        "--text", nargs="+", action="extend", metavar="TEXT", help="input text(s); may be repeated, order is kept"
    )
    src.add_argument(
        "--text-file",
        metavar="FILE",
        help="UTF-8 file, one input per line (split on \\n and \\r\\n only; blank lines are skipped; "
        "each record carries its line number)",
    )


def inspect_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m transformer inspect",
        description="Run text through a model; print tokens, ids, prediction and attention (layers x heads x "
        "T x T per input, softmax weights after masking). Records are written as they are ready, in input order.",
    )
    add_model_options(p)
    add_text_options(p, required=False)  # or --image
    p.add_argument(
        "--image",
        nargs="+",
        action="extend",
        metavar="FILE",
        help="PNG/JPEG image(s) for a vision model (instead of --text); may be repeated",
    )
    p.add_argument(
        "--target",
        nargs="+",
        action="extend",
        metavar="TEXT",
        help="decoder input of an encoder-decoder (teacher-forced, one per input), exactly as given "
        "unless the target vocabulary has a start token",
    )
    p.add_argument("--attention", default="all", choices=["all", "none"], help="none: tokens, ids, predictions only")
    p.add_argument(
        "--calibration",
        default="temperature",
        choices=["temperature", "none"],
        help="temperature (default): probabilities at the model's fitted temperature, the numbers the pages "
        "show, with the raw ones beside them; none: the raw softmax",
    )
    p.add_argument(
        "--format", default="json", choices=["json", "jsonl"], help="json: one object; jsonl: one record per line"
    )
    p.add_argument(
        "--lens",
        action="store_true",
        help="add a `lens` list per input: each layer's top tokens at the last position (a masked LM's first "
        "blank), read through the model's own final norm and output layer",
    )
    p.add_argument(
        "--contributions",
        action="store_true",
        help="add `contributions`: the embedding's, each head's and each feed-forward block's share of the "
        "predicted token's logit, their `sum` and the model's `logit`",
    )
    return p


def attribute_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m transformer attribute",
        description="Which tokens drove a classifier's prediction: attention rollout, gradient x input and "
        "integrated gradients per token (what the Classifier page shows), as one JSON object.",
    )
    add_model_options(p)
    add_text_options(p)
    p.add_argument("--class", dest="target_class", metavar="LABEL", help="class to explain (default: the predicted)")
    p.add_argument("--steps", type=int, default=50, help="integrated-gradients steps (default 50)")
    p.add_argument(
        "--baseline",
        default="unk",
        choices=["unk", "pad", "zero"],
        help="integrated-gradients baseline: every token's embedding set to <unk>'s (default, as on the Classifier "
        "page), to <pad>'s, or to zero",
    )
    p.add_argument(
        "--score",
        default="log-odds",
        choices=["log-odds", "logit"],
        help="what is explained: the class's log-odds (default, as on the Classifier page) or its raw logit",
    )
    return p


def import_options(args: argparse.Namespace) -> ImportOptions:
    """The CLI's answers for a foreign checkpoint (None where not given)."""
    if args.vocab is not None and Path(args.vocab).is_dir():
        raise ValueError(f"--vocab {Path(args.vocab).name} is a folder: give the vocabulary file (vocab.txt or JSON).")
    scale = None if args.scale_embedding is None else args.scale_embedding == "yes"
    return ImportOptions(
        vocab_path=args.vocab,
        num_heads=args.heads,
        pooling=args.pooling,
        target_vocab_path=args.target_vocab,
        scale_embedding=scale,
        positional=args.positional,
        pe_base=args.pe_base,
        bos=args.bos,
        eos=args.eos,
    )


def load(args: argparse.Namespace):
    """The model named by ``--checkpoint`` with the given answers; warns about flags it ignores."""
    from ..loader import load_model

    if args.max_len is not None and args.max_len < 1:
        raise ValueError("--max-len must be at least 1.")
    resolve_hub(args)
    options = import_options(args)
    device = resolve_device(args.device)
    loaded = load_model(args.checkpoint, device, options)
    if Path(args.checkpoint).is_dir() or loaded.format == "attention-lab" and not loaded.assumptions:
        given = [f for f in ("heads", "pooling", "positional", "scale_embedding", "bos", "eos") if getattr(args, f)]
        if given:
            warn(f"{', '.join('--' + g.replace('_', '-') for g in given)} ignored: this model's config says it.")
    for note in loaded.notes:
        if "NaN" in note:
            warn(note)
    return loaded


def resolve_hub(args: argparse.Namespace) -> None:
    """``--hub NAME``: the model's folder (cached, else downloaded) becomes ``args.checkpoint``."""
    if (args.checkpoint is None) == (getattr(args, "hub", None) is None):
        raise ValueError("Give exactly one of --checkpoint PATH or --hub NAME.")
    if args.hub is not None:
        from ..hf import download

        args.checkpoint = str(download(args.hub))


def text_inputs(args: argparse.Namespace) -> Iterator:
    from .inspect import Input, file_inputs

    if args.text is not None:
        empty = [str(i + 1) for i, text in enumerate(args.text) if not text.strip()]
        if empty:
            raise ValueError(f"Input {', '.join(empty)} has no words: type some text.")
        return iter([Input(text, i) for i, text in enumerate(args.text)])
    return file_inputs(args.text_file)


def run_inspect(argv: list[str]) -> int:
    from .inspect import write_records

    parser = inspect_parser()
    args = parser.parse_args(argv)
    given = [name for name in ("text", "text_file", "image") if getattr(args, name) is not None]
    if len(given) != 1:
        parser.error("give exactly one of --text, --text-file or --image")
    if args.image is not None:
        return guarded(lambda: run_images(args))

    def work() -> int:
        loaded = load(args)
        targets = args.target
        if targets is not None and loaded.config.kind != "encoder-decoder":
            warn("--target ignored: this model is a classifier; only encoder-decoder models take a decoder input.")
            targets = None
        if targets is not None and args.text is not None and len(targets) != len(args.text):
            raise ValueError(f"Give one --target per input: {len(args.text)} inputs, {len(targets)} targets.")
        inputs = text_inputs(args)
        count = write_records(
            sys.stdout.buffer,
            loaded,
            inputs,
            args.format,
            args.attention,
            args.max_len,
            targets,
            args.calibration,
            folder=args.checkpoint,
            residual=(args.lens, args.contributions),
        )
        if count == 0:
            raise ValueError("No input: every line of the file is blank.")
        return 0

    return guarded(work)


def run_images(args: argparse.Namespace) -> int:
    """``inspect --image``: a vision model's records (transformer.vision.inspect), json or jsonl."""
    import orjson

    from ..vision.inspect import inspect_images, is_vision_model

    resolve_hub(args)
    if not is_vision_model(args.checkpoint):
        raise ValueError(f"--image needs a vision model; {Path(args.checkpoint).name} is not one (use --text).")
    missing = [Path(p).name for p in args.image if not Path(p).is_file()]
    if missing:
        raise ValueError(f"--image {', '.join(missing)}: no such file.")
    doc = inspect_images(args.checkpoint, args.image, args.device, attention=args.attention == "all")
    out = sys.stdout.buffer
    if args.format == "json":
        out.write(orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
    else:
        out.writelines(orjson.dumps(r, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n" for r in doc["inputs"])
    return 0


def run_attribute(argv: list[str]) -> int:
    import orjson

    from ..analysis.analyze import calibration_temperature
    from ..text.attribution import attribute
    from .export import model_block

    args = attribute_parser().parse_args(argv)

    def work() -> int:
        loaded = load(args)
        if loaded.config.kind != "classifier" or not loaded.config.has_head:
            raise ValueError("attribute needs a classifier with a head; this model has no class predictions.")
        records = []
        for item in text_inputs(args):
            a = attribute(
                loaded,
                item.text,
                args.target_class,
                args.steps,
                baseline=args.baseline,
                max_len=args.max_len,
                score=args.score,
            )
            records.append(attribution_record(a, item, calibration_temperature(loaded)))
        doc = {"model": model_block(loaded), "inputs": records}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
        return 0

    return guarded(work)


def attribution_record(a, item, temperature: float = 1.0) -> dict:
    """One input's attributions: per token (n,) scores and the integrated-gradients check.
    ``probabilities`` at the model's fitted ``temperature`` (as inspect and the pages), raw beside."""
    from ..text.calibration import rescale

    record = {"text": a.text}
    if item.line is not None:
        record["line"] = item.line
    record.update(
        tokens=a.tokens,
        truncated=a.truncated,
        probabilities={n: float(p) for n, p in zip(a.label_names, rescale(a.probabilities, temperature))},
        raw_probabilities={n: float(p) for n, p in zip(a.label_names, a.probabilities)},
        predicted=a.label_names[a.predicted],
        explained=a.target_label,
        rollout=a.rollout.astype(float),
        gradient_x_input=a.grad_input.astype(float),
        integrated_gradients=a.integrated.astype(float),
        integrated_gradients_check={
            "logit_difference": a.ig_delta,
            "completeness_error": a.ig_error,
            "steps": a.ig_steps,
            "baseline": a.ig_baseline,
        },
    )
    return record


def warn(message: str) -> None:
    print(f"warning: {one_line(message)}", file=sys.stderr)


def one_line(message: str) -> str:
    """A message on one line, without temporary folders (the user's file names are kept)."""
    text = " ".join(str(message).split())
    temp = re.escape(tempfile.gettempdir().rstrip("/"))
    return re.sub(temp + r"/[^\s'\"]*/", "", text)


def describe(err: BaseException) -> str:
    """What went wrong and what to do, for any exception a bad file or input can raise."""
    from safetensors import SafetensorError

    name = type(err).__name__
    if isinstance(err, FileNotFoundError | ValueError):
        return str(err)
    if isinstance(err, SafetensorError):
        return f"Could not read a safetensors file ({err}): it is damaged or not safetensors; save it again."
    if isinstance(err, RecursionError):
        return "A file is nested too deeply to read (e.g. a JSON vocabulary nested thousands of levels): fix the file."
    if isinstance(err, MemoryError):
        return "Out of memory: use --attention none, a smaller --max-len, or a smaller model."
    if isinstance(err, RuntimeError) and ("size mismatch" in str(err) or "state_dict" in str(err)):
        return f"The weights do not fit the model described with them ({str(err)[:300]}); check the config and flags."
    if isinstance(err, OSError):
        return f"Could not read {Path(err.filename or '?').name}: {err.strerror or err}."
    if isinstance(err, TypeError | KeyError | IndexError | AttributeError):
        return f"A file holds a value of an unexpected type or shape ({name}: {str(err)[:200]}); check the files."
    return f"{name}: {str(err)[:300]}. Check the files and flags (see --help)."


def guarded(work: Callable[[], int]) -> int:
    """Run ``work``; any failure becomes one ``error:`` line on stderr and exit status 2."""
    try:
        return work()
    except KeyboardInterrupt:
        raise
    except BrokenPipeError:
        return 0  # e.g. `| head`: the reader has what it wanted
    except Exception as err:  # noqa: BLE001 - every failure must end as one clear line, never a traceback
        print(f"error: {one_line(describe(err))}", file=sys.stderr)
        return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(DESCRIPTION)
        return 0 if argv else EXIT_ERROR
    command, rest = argv[0], argv[1:]
    if command == "inspect":
        return run_inspect(rest)
    if command == "attribute":
        return run_attribute(rest)
    if command == "train":
        from ..text.train import main as train_main

        return train_main(rest)
    if command == "evaluate":
        from ..text.evaluate import main as evaluate_main

        return evaluate_main(rest)
    if command == "lab":
        from ..lab.cli import main as lab_main

        return lab_main(rest)
    print(
        f"error: unknown command {command!r}; use inspect, attribute, train, evaluate or lab (see --help).",
        file=sys.stderr,
    )
    return EXIT_ERROR
