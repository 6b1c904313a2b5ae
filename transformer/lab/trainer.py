"""A small decoder-only Transformer (the core's ``DecoderLM``) trained on one toy task, step by step.

The trainer is deterministic at a fixed seed: the weights come from a seeded generator, the
batches from the trainer's own numpy generator, the learning rate from the step number alone and
dropout is off. So a run paused and resumed (or stepped by hand) reaches the same weights, step
for step, as a run that never stopped; a snapshot reads the model without touching either generator.

A snapshot holds what the Train page draws: the loss and the held-out accuracy so far, every
head's attention on one fixed held-out row (read from the forward's returned per-head weights),
and each head's previous-token and induction scores (the head atlas's scores).
"""

from __future__ import annotations

import threading
import time
import warnings
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..analysis.head_roles import induction_score, previous_token_score
from ..core.decoder import DecoderLM, init_weights, lm_config
from .tasks import FIRST_SYMBOL, START_ID, Task

POSITIONALS = ("learned", "sinusoidal", "none")
LIMITS = {"layers": (1, 4), "heads": (1, 4), "d_model": (8, 128), "batch": (1, 128), "length": (2, 32)}
HELD_OUT_ROWS = 256
WARMUP_STEPS = 20
_BUILD_LOCK = threading.Lock()  # torch's global generator is seeded while a model is built


def positionals() -> tuple[str, ...]:
    """The positional encodings the core offers a decoder: rotary too once the core has it."""
    from ..core.config import POSITIONALS as CORE

    return POSITIONALS + (("rotary",) if "rotary" in CORE else ())


@dataclass(frozen=True)
class LabSettings:
    """One training: the task, the model's sizes, the optimiser and the seed."""

    task: str = "reverse"
    length: int = 8
    symbols: int = 10
    layers: int = 2
    heads: int = 4
    d_model: int = 64
    feed_forward: bool = True  # False: attention-only layers (no feed-forward block)
    positional: str = "learned"
    # True: the output layer is the input embedding (the bundled language model's choice). Measured: with it,
    # the induction circuit forms late or shifted (bench/bench_lab_tying.py); most decoders untie it
    tied_output: bool = False
    lr: float = 3e-3
    batch: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        for name, (low, high) in LIMITS.items():
            if not low <= getattr(self, name) <= high:
                raise ValueError(f"{name} must be between {low} and {high} (got {getattr(self, name)}).")
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of heads ({self.heads}).")
        if self.positional not in positionals():
            raise ValueError(f"positional must be one of {', '.join(positionals())} (got {self.positional!r}).")
        if not 0 < self.lr <= 0.1:
            raise ValueError(f"lr must be in (0, 0.1] (got {self.lr}).")
        Task(self.task, self.length, self.symbols)  # checks the task's own fields

    def replace(self, **changes) -> LabSettings:
        return LabSettings(**{**asdict(self), **changes})

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Snapshot:
    """The model at one step. seconds: time spent training and measuring so far (wall clock), cpu_seconds:
    the CPU time of the thread that did it; loss: mean training loss since the previous snapshot; accuracy: share
    of held-out answer tokens right, exact: share of held-out rows with every answer token right;
    attention (L, H, T, T) float32 on the fixed example row; previous, induction (L, H) head scores."""

    step: int
    seconds: float
    cpu_seconds: float
    loss: float
    accuracy: float
    exact: float
    attention: np.ndarray
    previous: np.ndarray
    induction: np.ndarray

    def summary(self) -> dict:
        """The numbers without the attention (what a curve or the CLI reports)."""
        return {
            "step": self.step,
            "seconds": round(self.seconds, 2),
            "cpu_seconds": round(self.cpu_seconds, 2),
            "loss": round(self.loss, 4),
            "accuracy": round(self.accuracy, 4),
            "exact": round(self.exact, 4),
            "induction": round(float(self.induction.max()), 4),
            "previous": round(float(self.previous.max()), 4),
        }


def build_model(settings: LabSettings, task: Task) -> DecoderLM:
    """The core's decoder-only model for ``task``, its weights drawn from ``settings.seed``.
    Attention-only layers have a feed-forward block of width 0 whose output bias stays at zero."""
    config = lm_config(
        task.vocab_size,
        d_model=settings.d_model,
        num_heads=settings.heads,
        num_layers=settings.layers,
        d_ff=4 * settings.d_model if settings.feed_forward else 0,
        max_len=task.row_length,
        positional=settings.positional,
        tie_output_embedding=settings.tied_output,
        bos_id=START_ID,
        eos_id=START_ID,
        tokenizer="byte_bpe",
    )
    with _BUILD_LOCK, torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Initializing zero-element tensors")
        torch.manual_seed(settings.seed)
        model = DecoderLM(config)
        init_weights(model)
    if not settings.feed_forward:
        for layer in model.layers:
            layer.ffn.linear2.bias.requires_grad_(False)  # zero: the block adds nothing
    return model


class Trainer:
    """``step()`` trains one batch; ``snapshot()`` measures the model. Not thread-safe: one thread
    drives it (``transformer.lab.runner`` does so for the app)."""

    def __init__(self, settings: LabSettings) -> None:
        self.settings = settings
        self.task = Task(settings.task, settings.length, settings.symbols)
        self.model = build_model(settings, self.task)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=settings.lr, betas=(0.9, 0.98), weight_decay=0.01)
        self.rng = np.random.default_rng([settings.seed, 1])
        held_out = self.task.sample(np.random.default_rng([settings.seed, 2]), HELD_OUT_ROWS, held_out=True)
        self.held_out = (torch.from_numpy(held_out.rows), torch.from_numpy(held_out.answer))
        self.example = self.task.example(settings.seed)
        self.steps = 0
        self.seconds = 0.0  # time spent training and measuring (not paused)
        self.cpu_seconds = 0.0  # the CPU time of that, on the thread that did it
        self._losses: list[float] = []

    @property
    def example_tokens(self) -> list[str]:
        return self.task.tokens(self.example.rows[0])

    def step(self) -> float:
        """One optimisation step on a fresh training batch; returns its loss."""
        start, cpu = time.perf_counter(), time.thread_time()
        batch = self.task.sample(self.rng, self.settings.batch)
        rows, answer = torch.from_numpy(batch.rows), torch.from_numpy(batch.answer)
        for group in self.optimizer.param_groups:
            group["lr"] = self.settings.lr * min(1.0, (self.steps + 1) / WARMUP_STEPS)
        self.model.train()
        logits = self.model(rows[:, :-1]).logits  # (B, T-1, V)
        loss = F.cross_entropy(logits[answer], rows[:, 1:][answer])
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.steps += 1
        value = loss.item()
        self._losses.append(value)
        self.seconds += time.perf_counter() - start
        self.cpu_seconds += time.thread_time() - cpu
        return value

    @torch.no_grad()
    def evaluate(self) -> tuple[float, float]:
        """(token accuracy, exact-row accuracy) of greedy next-token answers on the held-out rows,
        each answer read with the true tokens before it (teacher forcing)."""
        rows, answer = self.held_out
        self.model.eval()
        predicted = self.model(rows[:, :-1]).logits.argmax(-1)
        right = (predicted == rows[:, 1:]) | ~answer
        return float(right[answer].float().mean()), float(right.all(dim=1).float().mean())

    @torch.no_grad()
    def attention(self) -> np.ndarray:
        """(L, H, T, T) float32: every head's weights on the fixed example row."""
        self.model.eval()
        out = self.model(torch.from_numpy(self.example.rows), need_weights=True)
        return np.stack([w.weights[0].float().numpy() for w in out.attention])

    def head_scores(self, attention: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(previous-token (L, H) on the example, induction (L, H) on repeated random spans)."""
        return previous_token_score(attention), probe_induction(self.model, self.task, self.settings.seed)

    def snapshot(self) -> Snapshot:
        """Measure the model now (no generator of the training is touched)."""
        start, cpu = time.perf_counter(), time.thread_time()
        accuracy, exact = self.evaluate()
        attention = self.attention()
        previous, induction = self.head_scores(attention)
        loss = float(np.mean(self._losses)) if self._losses else float("nan")
        self._losses = []
        self.seconds += time.perf_counter() - start
        self.cpu_seconds += time.thread_time() - cpu
        return Snapshot(
            self.steps, self.seconds, self.cpu_seconds, loss, accuracy, exact, attention, previous, induction
        )


PROBE_ROWS = 16


@torch.no_grad()
def probe_induction(model: DecoderLM, task: Task, seed: int = 0) -> np.ndarray:
    """(L, H) induction score of every head (``head_roles.induction_score``), averaged over random
    spans of three lengths each written twice at two places among random filler: a head that only
    looks a fixed distance back (a positional shortcut) scores high at one length and place, an
    induction head at all of them."""
    rng = np.random.default_rng([seed, 3])
    periods = sorted({max(2, task.length // 2), (max(2, task.length // 2) + task.length) // 2, task.length})
    periods = [p for p in periods if 1 + 2 * p <= task.row_length]
    was_training = model.training
    model.eval()
    scores = []
    for period in periods:
        for start in sorted({1, task.row_length - 2 * period}):
            rows = rng.integers(FIRST_SYMBOL, task.vocab_size, size=(PROBE_ROWS, task.row_length))
            rows[:, 0] = START_ID
            rows[:, start + period : start + 2 * period] = rows[:, start : start + period]
            out = model(torch.from_numpy(rows), need_weights=True)
            weights = np.stack([w.weights.float().numpy() for w in out.attention])  # (L, B, H, T, T)
            scores.append(induction_score(weights, period, start).mean(axis=1))
    model.train(was_training)
    return np.mean(scores, axis=0)


def train_for(
    settings: LabSettings, seconds: float, max_steps: int = 0, snapshot_every: float = 1.0, clock: str = "wall"
) -> tuple[Trainer, list[Snapshot]]:
    """Train for ``seconds`` (or ``max_steps`` steps when > 0, whichever comes first), a snapshot every
    ``snapshot_every`` seconds and one at the end, on the caller's thread. ``clock``: "wall" counts
    elapsed time, "cpu" this thread's CPU time (what an idle machine's wall clock would show; on a
    busy one the wall clock also counts the time other work took the core)."""
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu' (got {clock!r}).")
    spent = (lambda tr: tr.seconds) if clock == "wall" else (lambda tr: tr.cpu_seconds)
    trainer = Trainer(settings)
    snapshots = [trainer.snapshot()]
    last = 0.0
    while spent(trainer) < seconds and not (max_steps and trainer.steps >= max_steps):
        trainer.step()
        if spent(trainer) - last >= snapshot_every:
            snapshots.append(trainer.snapshot())
            last = spent(trainer)
    if snapshots[-1].step != trainer.steps:
        snapshots.append(trainer.snapshot())
    return trainer, snapshots


def first_reaching(snapshots: list[Snapshot], field: str, threshold: float) -> dict | None:
    """{step, seconds, cpu_seconds} of the first snapshot whose ``field`` (accuracy, or the best head's
    induction score) reaches ``threshold``; None when none does."""
    for snap in snapshots:
        value = float(np.max(getattr(snap, field)))
        if value >= threshold:
            return {
                "step": snap.step,
                "seconds": round(snap.seconds, 2),
                "cpu_seconds": round(snap.cpu_seconds, 2),
                "value": round(value, 4),
            }
    return None
