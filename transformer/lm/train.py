"""Train the bundled review language model: ``python -m transformer.lm.train --help``.

Recipe: one byte-level BPE vocabulary learned on both languages' training reviews; each language's
documents joined by ``<|endoftext|>`` into one stream and cut into context-long windows, drawn half
English, half Korean; a share of each batch is documents with a repeated span (random tokens, or a
span of review text, written twice) so that induction heads form within the budget; AdamW with
warm-up and cosine decay over a wall-clock budget. Every ``--probe-every`` steps each head's induction
score is measured and kept; at the end, validation loss and perplexity per language go to metrics.json.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from ..bundle import load_bundle, save_bundle
from ..core.bpe import EOT, TOKENIZER_FILE, load_tokenizer, train_tokenizer, vocab_of
from ..core.decoder import DecoderLM, init_weights, lm_config
from .data import NSMC_TRAIN, load_corpus
from .induction import head_induction_scores
from .train_metrics import build_metrics
from .train_options import add_layer_arguments, layer_options
from .train_state import TrainState, load_state, restore, save_state

LANGS = ("en", "ko")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="assets/models/review-lm", help="model folder to write")
    p.add_argument(
        "--init-from",
        default=None,
        help="a bundled language model to go on training (its tokenizer and sizes are kept)",
    )
    p.add_argument("--imdb", default=None, help="IMDB archive or folder (train split is read)")
    p.add_argument("--korean", default=str(NSMC_TRAIN), help="NSMC-style train .tsv.gz")
    p.add_argument("--limit", type=int, default=0, help="documents per language (0: all); for smoke runs")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-ff", type=int, default=512)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--minutes", type=float, default=50.0, help="wall-clock budget for the optimisation steps")
    p.add_argument("--repeat-share", type=float, default=0.25, help="share of batch rows with a repeated span")
    p.add_argument("--random-share", type=float, default=0.5, help="share of repeated spans made of random ids")
    p.add_argument(
        "--random-ids",
        type=int,
        nargs=2,
        default=None,
        metavar=("FIRST", "END"),
        help="random span ids and the induction probe draw from [FIRST, END) (default: every non-special id)",
    )
    p.add_argument(
        "--warm-steps",
        type=int,
        default=0,
        help="first steps trained only on rows of random ids with a repeated span (a curriculum for induction heads)",
    )
    p.add_argument(
        "--warm-schedule",
        default=None,
        metavar="LEN:STEPS,...",
        help="a curriculum by row length, run before the mix: e.g. 32:1500,64:500 trains 1,500 steps on 32-token rows "
        "of random ids with a repeated span, then 500 on 64-token rows (replaces --warm-steps)",
    )
    p.add_argument("--probe-every", type=int, default=100)
    p.add_argument("--val-windows", type=int, default=256, help="validation windows per language")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    add_layer_arguments(p)
    p.add_argument("--steps", type=int, default=0, help="a budget of steps instead of --minutes (0: the minutes)")
    p.add_argument(
        "--state-dir", default=None, help="where the training state is saved (default runs/<out name>-state)"
    )
    p.add_argument("--save-every", type=float, default=5.0, help="minutes between saves of the training state")
    p.add_argument("--resume", action="store_true", help="go on from the state saved in --state-dir")
    p.add_argument(
        "--stop-after", type=int, default=0, help="end this session at this step, state saved (0: run to the budget)"
    )
    return p.parse_args(argv)


def token_stream(tok, docs: list[str], eot: int) -> np.ndarray:
    """Every document's ids, each preceded by ``<|endoftext|>``, as one int32 array."""
    parts = []
    for enc in tok.encode_batch(docs):
        parts.append(np.asarray([eot, *enc.ids], dtype=np.int32))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


def windows(stream: np.ndarray, length: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """(count, length) random windows of the stream."""
    if len(stream) <= length:
        raise ValueError(f"a stream of {len(stream)} tokens holds no window of {length}: give more text")
    starts = rng.integers(0, len(stream) - length, size=count)
    return np.stack([stream[s : s + length] for s in starts])


def repeated_rows(
    count: int,
    length: int,
    stream: np.ndarray,
    ids: tuple[int, int],
    eot: int,
    rng: np.random.Generator,
    random_share: float,
) -> np.ndarray:
    """(count, length) rows ``<eot> span span`` then review text; the span (10..length//2-1 tokens) is
    uniform random ids with probability ``random_share``, else a piece of review text."""
    rows = windows(stream, length, count, rng)
    for row in rows:
        k = int(rng.integers(10, length // 2))
        if rng.random() < random_share:
            span = rng.integers(ids[0], ids[1], size=k)
        else:
            s = int(rng.integers(0, len(stream) - k))
            span = stream[s : s + k]
        row[: 1 + 2 * k] = np.concatenate([[eot], span, span])
    return rows


def make_batch(streams, args, ids, eot, rng) -> torch.Tensor:
    """(batch, context + 1) ids: repeated-span rows first, then windows drawn half per language."""
    n_rep = int(round(args.batch * args.repeat_share))
    parts = []
    langs = rng.integers(0, 2, size=args.batch)
    for i, lang in enumerate(LANGS):
        stream = streams[lang]
        n_lang = int((langs[:n_rep] == i).sum())
        if n_lang:
            parts.append(repeated_rows(n_lang, args.context + 1, stream, ids, eot, rng, args.random_share))
        n_plain = int((langs[n_rep:] == i).sum())
        if n_plain:
            parts.append(windows(stream, args.context + 1, n_plain, rng))
    return torch.from_numpy(np.concatenate(parts).astype(np.int64))


def warm_schedule(args) -> list[tuple[int, int]]:
    """[(row length, steps), ...] of the curriculum: ``--warm-schedule``, else ``--warm-steps`` at the context."""
    if not args.warm_schedule:
        return [(args.context, args.warm_steps)] if args.warm_steps else []
    stages = []
    for part in args.warm_schedule.split(","):
        length, steps = (int(x) for x in part.split(":"))
        if not 24 <= length <= args.context or steps < 0:
            raise SystemExit(f"--warm-schedule {part}: row length must be 24..{args.context}, steps >= 0")
        stages.append((length, steps))
    return stages


def warm_length(stages: list[tuple[int, int]], step: int) -> int | None:
    """The curriculum's row length at ``step``, or None once it is over."""
    for length, steps in stages:
        if step < steps:
            return length
        step -= steps
    return None


def warm_batch(args, ids: tuple[int, int], eot: int, rng: np.random.Generator, context: int) -> torch.Tensor:
    """(batch, context + 1) ids of the curriculum's steps: ``<eot> span span`` then more random ids, all
    drawn uniformly from ``ids``; the only way to predict the second copy is to look back (an induction head).
    Shorter rows come in more of them, so that every step sees as many tokens as a full-length batch."""
    length = context + 1
    count = args.batch * max(1, args.context // context)
    rows = rng.integers(ids[0], ids[1], size=(count, length))
    for row in rows:
        k = int(rng.integers(10, length // 2))
        row[0] = eot
        row[1 + k : 1 + 2 * k] = row[1 : 1 + k]
    return torch.from_numpy(rows.astype(np.int64))


def lm_loss(model: DecoderLM, batch: torch.Tensor) -> torch.Tensor:
    logits = model(batch[:, :-1]).logits  # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


@torch.no_grad()
def evaluate(model: DecoderLM, val: dict[str, np.ndarray], length: int) -> dict[str, dict]:
    """Mean next-token loss (nats per token) and perplexity per language on fixed validation windows."""
    model.eval()
    out = {}
    for lang, rows in val.items():
        losses = [
            float(lm_loss(model, torch.from_numpy(rows[i : i + 32].astype(np.int64)))) for i in range(0, len(rows), 32)
        ]
        sizes = [len(rows[i : i + 32]) for i in range(0, len(rows), 32)]
        loss = float(np.average(losses, weights=sizes))
        out[lang] = {
            "loss": round(loss, 4),
            "perplexity": round(math.exp(loss), 2),
            "tokens": int(len(rows) * (length - 1)),
        }
    model.train()
    return out


def lr_at(step: int, fraction: float, args) -> float:
    """Linear warm-up over ``--warmup`` steps, then cosine decay to 10% by the end of the budget."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(fraction, 1.0))))


def make_optimizer(model: DecoderLM, lr: float) -> torch.optim.Optimizer:
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


def prepare(args):
    t0 = time.time()
    corpus = load_corpus(args.imdb, args.korean, limit=args.limit)
    if args.resume:
        tok = load_tokenizer(state_dir(args))
    elif args.init_from:
        tok = load_tokenizer(args.init_from)
    else:
        tok = train_tokenizer(corpus.train["en"] + corpus.train["ko"], args.vocab_size)
    eot = tok.token_to_id(EOT)
    streams = {lang: token_stream(tok, corpus.train[lang], eot) for lang in LANGS}
    val_streams = {lang: token_stream(tok, corpus.val[lang], eot) for lang in LANGS}
    rng = np.random.default_rng(args.seed + 1)
    for lang in LANGS:
        if len(val_streams[lang]) <= args.context + 1:
            raise SystemExit(
                f"The {lang} validation split has {len(val_streams[lang])} tokens, fewer than one window of "
                f"{args.context + 1}: give more documents (2 % of them are held out for validation)."
            )
    val = {lang: windows(val_streams[lang], args.context + 1, args.val_windows, rng) for lang in LANGS}
    Path(state_dir(args)).mkdir(parents=True, exist_ok=True)
    tok.save(str(Path(state_dir(args)) / TOKENIZER_FILE))
    print(
        f"data and tokenizer in {time.time() - t0:.0f}s; train tokens " + str({k: len(v) for k, v in streams.items()}),
        flush=True,
    )
    return corpus, tok, eot, streams, val_streams, val


def start_model(args, tok, eot: int) -> tuple[DecoderLM, object]:
    """(model in training mode, its config): new, or with ``--init-from`` the bundled model to go on from."""
    if args.init_from:
        loaded = load_bundle(args.init_from)
        if not isinstance(loaded.model, DecoderLM) or loaded.config.vocab_size != tok.get_vocab_size():
            raise SystemExit(f"--init-from {args.init_from}: not a language model with this tokenizer.")
        args.context = loaded.config.max_len
        return loaded.model.train(), loaded.config
    config = lm_config(
        tok.get_vocab_size(),
        d_model=args.d_model,
        num_heads=args.heads,
        num_layers=args.layers,
        d_ff=args.d_ff,
        max_len=args.context,
        bos_id=eot,
        eos_id=eot,
        **layer_options(args),
    )
    model = DecoderLM(config)
    init_weights(model)
    return model, config


def state_dir(args) -> str:
    """Where the training state and its tokenizer are kept: ``--state-dir``, else runs/<out name>-state."""
    return args.state_dir or str(Path("runs") / f"{Path(args.out).name}-state")


def begin(args, tok, eot: int, rng: np.random.Generator, saved: dict | None):
    """(model, config, optimiser, TrainState): new, or as ``saved`` (the payload of ``--resume``) left them."""
    if saved is not None:
        model, config, opt, state = restore(saved, lambda m: make_optimizer(m, args.lr), rng)
        print(f"resumed at step {state.step} ({state.seconds:.0f}s trained)", flush=True)
        return model, config, opt, state
    model, config = start_model(args, tok, eot)
    return model, config, make_optimizer(model, args.lr), TrainState(curve=[], losses=[], resumed_at=[])


def progress(args, state: TrainState) -> float:
    """The share of the budget used: steps of ``--steps``, else seconds of ``--minutes``."""
    if args.steps:
        return state.step / args.steps
    return state.seconds / (args.minutes * 60.0)


def train_step(model, opt, batch: torch.Tensor, lr: float) -> float:
    for group in opt.param_groups:
        group["lr"] = lr
    loss = lm_loss(model, batch)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


def run(args, model, opt, state: TrainState, streams, eot: int, rng, ids) -> bool:
    """Train until the budget is spent (True) or ``--stop-after`` is reached (False), saving the state
    every ``--save-every`` minutes and at the end."""
    stages = warm_schedule(args)
    origin, saved_at = time.time() - state.seconds, time.time()
    bar = tqdm(total=args.steps or int(args.minutes * 60), desc="train", mininterval=10.0, initial=0)
    while progress(args, state) < 1.0:
        if args.stop_after and state.step >= args.stop_after:
            break
        if state.step % args.probe_every == 0:
            state.curve.append(probe_point(model, state.step, state.seconds, state.losses, args, ids))
            bar.set_postfix(step=state.step, loss=state.curve[-1]["train_loss"], induction=state.curve[-1]["max"])
        warm = warm_length(stages, state.step)
        batch = warm_batch(args, ids, eot, rng, warm) if warm else make_batch(streams, args, ids, eot, rng)
        state.losses = [
            *state.losses[-49:],
            train_step(model, opt, batch, lr_at(state.step, progress(args, state), args)),
        ]
        state.step += 1
        state.seconds = time.time() - origin
        bar.update((state.step if args.steps else int(state.seconds)) - bar.n)
        if time.time() - saved_at >= args.save_every * 60:
            save_state(state_dir(args), model, opt, state, rng)
            saved_at = time.time()
    bar.close()
    save_state(state_dir(args), model, opt, state, rng)
    return progress(args, state) >= 1.0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    saved = load_state(state_dir(args)) if args.resume else None
    if saved is not None:
        args.context = json.loads(saved["config"])["max_len"]  # the saved model's rows, whatever --context says
    corpus, tok, eot, streams, val_streams, val = prepare(args)
    model, config, opt, state = begin(args, tok, eot, rng, saved)
    ids = tuple(args.random_ids) if args.random_ids else (3, config.vocab_size)
    if not run(args, model, opt, state, streams, eot, rng, ids):
        print(f"stopped at step {state.step}; state saved in {state_dir(args)} (go on with --resume)", flush=True)
        return 0
    state.curve.append(probe_point(model, state.step, state.seconds, state.losses, args, ids))
    final_scores = np.asarray(state.curve[-1]["scores"])
    validation = evaluate(model, val, args.context + 1)
    print(f"validation {validation}; induction max {final_scores.max():.3f}", flush=True)
    metrics = build_metrics(args, corpus, streams, val_streams, validation, state, model, warm_schedule(args))
    model.eval()
    folder = save_bundle(args.out, model, config, vocab_of(tok), metrics)
    tok.save(str(Path(folder) / TOKENIZER_FILE))
    print(f"saved {folder}", flush=True)
    return 0


def probe_point(model, step: int, seconds: float, losses: list[float], args, ids: tuple[int, int]) -> dict:
    """One point of the induction curve: every head's score on the probe (ids in ``ids``), and on
    random ids from the whole vocabulary when the probe's range is narrower."""
    scores = head_induction_scores(model, first_id=ids[0], end_id=ids[1])
    point = {
        "step": step,
        "tokens": step * args.batch * args.context,
        "seconds": round(seconds, 1),
        "train_loss": round(float(np.mean(losses[-50:])), 4) if losses else None,
        "scores": np.round(scores, 4).tolist(),
        "max": round(float(scores.max()), 4),
    }
    if ids != (3, model.config.vocab_size):
        point["max_all_ids"] = round(float(head_induction_scores(model).max()), 4)
    return point


if __name__ == "__main__":
    raise SystemExit(main())
