"""Trainings in background threads, bounded for a shared server.

A :class:`Run` owns one :class:`~transformer.lab.trainer.Trainer` and the one thread that drives
it; it can be paused, resumed and stepped by hand, and stops on its own when its training time is
spent, when its thread has used its CPU-time cap, or when its owner (a browser session) is gone.
A :class:`RunPool` lets each owner hold one run at a time and at most ``max_running`` runs train at
once; the others wait in a queue, first come first served. A pool hands out no run of another owner:
the app keeps each session's run in that session's own state.

The training thread runs torch on one CPU thread (``torch.set_num_threads(1)``) so that its CPU time
is what the cap counts, and so that several trainings share a few cores fairly.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .tasks import Task
from .trainer import LabSettings, Snapshot, Trainer

QUEUED, RUNNING, PAUSED, DONE = "queued", "running", "paused", "done"
# why a run is done
FINISHED, CPU_CAP, SESSION_GONE, STOPPED, FAILED = "finished", "cpu-cap", "session-gone", "stopped", "failed"
CHUNK_SECONDS = 0.2  # a running thread looks at pause / stop requests this often


class LabRefused(ValueError):
    """A training that cannot start; ``code`` says why ("busy": its owner already has one, "too-large":
    it would need more memory than allowed, "building": asked of a run still building its model),
    ``fields`` the numbers a message shows."""

    def __init__(self, code: str, message: str, **fields) -> None:
        super().__init__(message)
        self.code, self.fields = code, fields


@dataclass(frozen=True)
class Limits:
    """What one server allows. Environment: ATTENTION_LAB_TRAININGS (runs at once, default 2),
    ATTENTION_LAB_TRAIN_CPU_S (CPU seconds per run, default 600), ATTENTION_LAB_TRAIN_MB (estimated
    memory per run, default 512)."""

    max_running: int = 2
    cpu_seconds: float = 600.0
    memory_bytes: int = 512 * 1024**2
    snapshot_every: float = 1.0
    max_snapshots: int = 240
    gone_grace: float = 30.0  # seconds an owner may be disconnected (a reload, a flaky network) before its run stops

    @classmethod
    def from_env(cls) -> Limits:
        env = os.environ
        return cls(
            max_running=max(1, int(env.get("ATTENTION_LAB_TRAININGS", 2))),
            cpu_seconds=float(env.get("ATTENTION_LAB_TRAIN_CPU_S", 600)),
            memory_bytes=int(float(env.get("ATTENTION_LAB_TRAIN_MB", 512)) * 1024**2),
        )


def estimated_bytes(settings: LabSettings, max_snapshots: int = 240) -> int:
    """A generous estimate of one run's memory: weights with their gradients and AdamW's two moments,
    a training step's activations kept for backward (and their gradients), and the snapshots."""
    task = Task(settings.task, settings.length, settings.symbols)
    d, t, layers = settings.d_model, task.row_length, settings.layers
    ffn = 4 * d if settings.feed_forward else 0
    tables = task.vocab_size * d * (1 if settings.tied_output else 2)  # the embedding (and the output layer)
    params = tables + t * d + layers * (4 * d * d + 2 * d * ffn + 8 * d)
    per_layer = settings.batch * t * (8 * d + 2 * ffn + 3 * settings.heads * t)  # floats kept for backward
    snapshot = layers * settings.heads * t * t + 1024
    return 4 * (4 * params + 2 * layers * per_layer) + 4 * snapshot * max_snapshots


@dataclass(frozen=True)
class RunStatus:
    """state: queued | running | paused | done; reason (when done): finished | cpu-cap | session-gone |
    stopped | failed; ahead: runs queued before this one; error: the message of a failed run."""

    state: str
    reason: str | None
    ahead: int
    steps: int
    seconds: float
    cpu_seconds: float
    budget: float
    error: str | None = None


class Run:
    """One training in its own thread. Use :meth:`RunPool.start` to make one."""

    def __init__(self, pool: RunPool, settings: LabSettings, budget: float, alive: Callable[[], bool]) -> None:
        self.settings, self.budget, self._pool, self._alive = settings, budget, pool, alive
        self._cond = threading.Condition()
        self._model_lock = threading.Lock()
        self._state, self._reason, self._error = QUEUED, None, None
        self._asked_steps, self._stop, self._busy = 0, False, False
        self._snapshots: list[Snapshot] = []
        self._cpu, self._gone_since = 0.0, None
        self._trainer: Trainer | None = None
        self._thread = threading.Thread(target=self._main, name="lab-training", daemon=True)

    # ---- what the owner asks -------------------------------------------------------------------------------------
    def status(self) -> RunStatus:
        with self._cond:
            trainer = self._trainer
            steps, seconds = (trainer.steps, trainer.seconds) if trainer else (0, 0.0)
            state, reason, error = self._state, self._reason, self._error
        return RunStatus(state, reason, self._pool.ahead_of(self), steps, seconds, self._cpu, self.budget, error)

    def snapshots(self) -> list[Snapshot]:
        with self._cond:
            return list(self._snapshots)

    @property
    def example_tokens(self) -> list[str]:
        task = Task(self.settings.task, self.settings.length, self.settings.symbols)
        return task.tokens(task.example(self.settings.seed).rows[0])

    def pause(self) -> None:
        """Stop training after the current step and give the place back to the queue."""
        with self._cond:
            if self._state not in (RUNNING, QUEUED):
                return
            self._state = PAUSED
            self._cond.notify_all()
        self._pool.release(self)

    def resume(self) -> None:
        """Train on: at once when a place is free, else after the runs queued before."""
        with self._cond:
            if self._state != PAUSED:
                return
            self._state = QUEUED
        self._pool.enqueue(self)

    def step(self, count: int = 1) -> None:
        """``count`` steps now, then a snapshot (while paused; a queued or running run ignores it)."""
        with self._cond:
            if self._state == PAUSED:
                self._asked_steps += count
                self._cond.notify_all()

    def stop(self, reason: str = STOPPED) -> None:
        with self._cond:
            self._stop = True
            if self._reason is None:
                self._reason = reason
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread has ended (True) or ``timeout`` passed (False)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no asked step is left and the run is not training (paused or done)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._busy or self._asked_steps or self._state in (RUNNING, QUEUED) or self._trainer is None:
                if self._state == DONE:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def export(self):
        """(a copy of the model in eval mode, its task, steps so far): safe while the run trains."""
        with self._model_lock:
            trainer = self._trainer
            if trainer is None:
                raise LabRefused("building", "The model is still being built; try again in a moment.")
            return copy.deepcopy(trainer.model).eval(), trainer.task, trainer.steps

    # ---- the pool's side ----------------------------------------------------------------------------------------
    def _admit(self) -> bool:
        """Queued -> running (the pool found a place); False when it is no longer waiting."""
        with self._cond:
            if self._state != QUEUED or self._stop:
                return False
            self._state = RUNNING
            self._cond.notify_all()
            return True

    @property
    def finished(self) -> bool:
        with self._cond:
            return self._state == DONE

    # ---- the training thread ------------------------------------------------------------------------------------
    def _main(self) -> None:
        torch.set_num_threads(1)
        start_cpu = time.thread_time()
        try:
            trainer = Trainer(self.settings)
            first = trainer.snapshot()
            with self._cond:
                self._trainer = trainer
                self._snapshots.append(first)
                self._cond.notify_all()
            while self._next_work(trainer, start_cpu):
                pass
        except Exception as err:  # a failed run says why on the page instead of dying silently
            with self._cond:
                self._reason, self._error = FAILED, f"{type(err).__name__}: {err}"
        finally:
            with self._cond:
                self._state = DONE
                self._reason = self._reason or FINISHED
                self._cond.notify_all()
            self._pool.release(self)

    def _next_work(self, trainer: Trainer, start_cpu: float) -> bool:
        """Wait for something to do, do one chunk of it; False when the run is over."""
        with self._cond:
            while not self._stop and not self._asked_steps and self._state != RUNNING:
                self._cond.wait(1.0)
                if not self._owner_here():
                    self._stop, self._reason = True, SESSION_GONE
            if self._stop:
                return False
            asked, self._asked_steps, self._busy = self._asked_steps, 0, True
        with self._model_lock:
            if asked:
                for _ in range(asked):
                    trainer.step()
            else:
                until = time.perf_counter() + CHUNK_SECONDS
                while self._state == RUNNING and time.perf_counter() < until and trainer.seconds < self.budget:
                    trainer.step()
            stopped_here = self._state != RUNNING and self._snapshots[-1].step != trainer.steps
            due = asked or stopped_here or trainer.seconds >= self.budget or self._snapshot_due(trainer)
            snap = trainer.snapshot() if due else None  # a paused run shows the step it paused at
        self._cpu = time.thread_time() - start_cpu
        with self._cond:
            self._busy = False
            self._cond.notify_all()
            if snap is not None:
                self._keep(snap)
            if trainer.seconds >= self.budget:
                self._reason = self._reason or FINISHED
            elif self._cpu >= self._pool.limits.cpu_seconds:
                self._reason = self._reason or CPU_CAP
            elif not self._owner_here():
                self._reason = self._reason or SESSION_GONE
            else:
                return True
            return False

    def _snapshot_due(self, trainer: Trainer) -> bool:
        last = self._snapshots[-1] if self._snapshots else None
        return last is None or trainer.seconds - last.seconds >= self._pool.limits.snapshot_every

    def _keep(self, snap: Snapshot) -> None:
        """Add ``snap``; past ``max_snapshots``, every other older one is dropped (the first and the last kept)."""
        self._snapshots.append(snap)
        if len(self._snapshots) > self._pool.limits.max_snapshots:
            self._snapshots = self._snapshots[:-1:2] + [snap]

    def _owner_here(self) -> bool:
        """False once the owner has been away for longer than the grace period."""
        if self._alive():
            self._gone_since = None
            return True
        now = time.monotonic()
        self._gone_since = self._gone_since or now
        return now - self._gone_since < self._pool.limits.gone_grace


class RunPool:
    """The server's trainings: one per owner, at most ``limits.max_running`` training at once."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits.from_env()
        self._lock = threading.Lock()
        self._owners: dict[str, Run] = {}
        self._queue: deque[Run] = deque()
        self._running: set[Run] = set()

    def start(self, owner: str, settings: LabSettings, budget: float, alive: Callable[[], bool] = lambda: True) -> Run:
        """A new run for ``owner`` training for ``budget`` seconds; raises LabRefused when ``owner``
        already has one that is not done, or when the settings need more memory than allowed."""
        need = estimated_bytes(settings, self.limits.max_snapshots)
        if need > self.limits.memory_bytes:
            need_mb, limit_mb = f"{need / 1024**2:,.0f}", f"{self.limits.memory_bytes / 1024**2:,.0f}"
            raise LabRefused(
                "too-large",
                f"This model would need about {need_mb} MB; the server allows {limit_mb} MB per training. Make it smaller.",
                need=need_mb,
                limit=limit_mb,
            )
        with self._lock:
            held = self._owners.get(owner)
            if held is not None and not held.finished:
                raise LabRefused("busy", "This session already has a training. Stop it before starting another.")
            run = Run(self, settings, budget, alive)
            self._owners[owner] = run
        run._thread.start()
        self.enqueue(run)
        return run

    def enqueue(self, run: Run) -> None:
        with self._lock:
            if run not in self._queue and run not in self._running:
                self._queue.append(run)
            self._schedule()

    def release(self, run: Run) -> None:
        """``run`` paused or ended: its place goes to the next queued run."""
        with self._lock:
            self._running.discard(run)
            if run in self._queue:
                self._queue.remove(run)
            if run.finished and self._owners.get(self._owner_of(run)) is run:
                del self._owners[self._owner_of(run)]
            self._schedule()

    def ahead_of(self, run: Run) -> int:
        """How many runs wait before ``run`` (0 when it is not waiting)."""
        with self._lock:
            return list(self._queue).index(run) if run in self._queue else 0

    def counts(self) -> tuple[int, int]:
        """(training now, waiting)."""
        with self._lock:
            return len(self._running), len(self._queue)

    def _owner_of(self, run: Run) -> str | None:
        return next((owner for owner, r in self._owners.items() if r is run), None)

    def _schedule(self) -> None:
        while self._queue and len(self._running) < self.limits.max_running:
            run = self._queue.popleft()
            if run._admit():
                self._running.add(run)
