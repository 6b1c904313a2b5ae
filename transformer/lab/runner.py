"""Trainings in worker processes, bounded for a shared server.

A :class:`Run` owns one training in a process of its own (``transformer.lab.worker``, started at a lower
CPU priority) and one thread in the server that talks to it: it can be paused, resumed and stepped by hand,
and it ends when its training time is spent, when its process has used its CPU-time cap, when its owner
(a browser session) is gone, or when it is stopped. Snapshots stream back over a socket as they are taken.
A :class:`RunPool` lets each owner hold one run at a time and at most ``max_running`` runs train at once;
the others wait in a queue, first come first served, without a process (one is started when a place is
free). A pool hands out no run of another owner: the app keeps each session's run in that session's state.

The worker runs torch on one thread and is ``os.nice``-d, so on a machine with N cores, N - 1 trainings
leave one core to the pages, and a busy core still serves the pages first.
"""

from __future__ import annotations

import io
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from .tasks import Task
from .trainer import LabSettings, Snapshot, build_model

QUEUED, RUNNING, PAUSED, DONE = "queued", "running", "paused", "done"
# why a run is done
FINISHED, CPU_CAP, SESSION_GONE, STOPPED, FAILED = "finished", "cpu-cap", "session-gone", "stopped", "failed"
POLL_SECONDS = 0.25  # the server's thread looks at its worker's messages and its owner this often
STOP_WAIT = 10.0  # seconds a worker has to end after "stop" before it is killed
ROOT = Path(__file__).resolve().parents[2]  # the worker's working directory: where it finds the package
# the worker lowers its priority first, then imports torch and the package (seconds of CPU, at the lower priority)
WORKER_BOOT = """import os, sys
try:
    os.nice(int(sys.argv[2]))
except OSError:
    pass
from transformer.lab.worker import main
main(int(sys.argv[1]))
"""


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class LabRefused(ValueError):
    """A training that cannot start; ``code`` says why ("busy": its owner already has one, "too-large":
    it would need more memory than allowed, "building": asked of a run still building its model),
    ``fields`` the numbers a message shows."""

    def __init__(self, code: str, message: str, **fields) -> None:
        super().__init__(message)
        self.code, self.fields = code, fields


@dataclass(frozen=True)
class Limits:
    """What one server allows. Environment: ATTENTION_LAB_TRAININGS (runs at once, default: the cores
    less one, at least 1), ATTENTION_LAB_TRAIN_CPU_S (CPU seconds per run, default 600),
    ATTENTION_LAB_TRAIN_MB (estimated memory per run, default 512), ATTENTION_LAB_TRAIN_NICE (how much
    lower the workers' CPU priority is, default 10)."""

    max_running: int = max(1, usable_cores() - 1)
    cpu_seconds: float = 600.0
    memory_bytes: int = 512 * 1024**2
    snapshot_every: float = 1.0
    max_snapshots: int = 240
    gone_grace: float = 30.0  # seconds an owner may be disconnected (a reload, a flaky network) before its run stops
    nice: int = 10

    @classmethod
    def from_env(cls) -> Limits:
        env = os.environ
        return cls(
            max_running=max(1, int(env.get("ATTENTION_LAB_TRAININGS", cls.max_running))),
            cpu_seconds=float(env.get("ATTENTION_LAB_TRAIN_CPU_S", 600)),
            memory_bytes=int(float(env.get("ATTENTION_LAB_TRAIN_MB", 512)) * 1024**2),
            nice=int(env.get("ATTENTION_LAB_TRAIN_NICE", 10)),
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


def start_worker(limits: Limits) -> tuple[subprocess.Popen, Connection]:
    """A worker process (``transformer.lab.worker.main``, at ``limits.nice``) and the server's end of its socket."""
    ours, theirs = socket.socketpair()
    command = [sys.executable, "-c", WORKER_BOOT, str(theirs.fileno()), str(limits.nice)]
    process = subprocess.Popen(
        command, pass_fds=(theirs.fileno(),), cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    theirs.close()  # the worker holds its end: when ours closes, the worker sees the end of the stream
    return process, Connection(ours.detach())


class Run:
    """One training in a worker process. Use :meth:`RunPool.start` to make one."""

    def __init__(self, pool: RunPool, settings: LabSettings, budget: float, alive: Callable[[], bool]) -> None:
        self.settings, self.budget, self._pool, self._alive = settings, budget, pool, alive
        self._cond = threading.Condition()
        self._state, self._reason, self._error = QUEUED, None, None
        self._stop = False
        self._outbox: list[tuple] = []  # commands for the worker, sent by the run's thread
        self._seq = 0  # the last command's sequence number
        self._unacked: set[int] = set()  # pause and step commands the worker has not finished yet
        self._snapshots: list[Snapshot] = []
        self._progress = (0, 0.0, 0.0)  # steps, seconds, cpu seconds
        self._model: tuple[bytes, int, int] | None = None  # the weights last sent: (bytes, steps, seq)
        self._started = False  # whether a worker process was ever started
        self.worker_pid: int | None = None  # the worker process's id, once started
        self._gone_since: float | None = None
        self._thread = threading.Thread(target=self._main, name="lab-training", daemon=True)

    # ---- what the owner asks -------------------------------------------------------------------------------------
    def status(self) -> RunStatus:
        with self._cond:
            steps, seconds, cpu = self._progress
            state, reason, error = self._state, self._reason, self._error
        return RunStatus(state, reason, self._pool.ahead_of(self), steps, seconds, cpu, self.budget, error)

    def snapshots(self) -> list[Snapshot]:
        with self._cond:
            return list(self._snapshots)

    @property
    def example_tokens(self) -> list[str]:
        task = Task(self.settings.task, self.settings.length, self.settings.symbols)
        return task.tokens(task.example(self.settings.seed).rows[0])

    def pause(self) -> None:
        """Stop training after the current chunk of steps and give the place back to the queue."""
        with self._cond:
            if self._state not in (RUNNING, QUEUED):
                return
            self._state = PAUSED
            if self._started or self._outbox:
                self._command("pause")
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
                self._command("step", count)

    def stop(self, reason: str = STOPPED) -> None:
        with self._cond:
            self._stop = True
            if self._reason is None:
                self._reason = reason
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run has ended and its worker process with it (True) or ``timeout`` passed (False)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def wait_done(self, timeout: float = 30.0) -> bool:
        """Block until the run is done (True; its worker may still be exiting) or ``timeout`` passed (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._state == DONE, timeout)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until the worker has done every command asked of it and the run is not training."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._state != DONE and (self._unacked or self._state in (RUNNING, QUEUED)):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def export(self, timeout: float = 30.0):
        """(a copy of the model in eval mode, its task, steps so far): asked of the worker while it lives,
        the final weights once it has ended."""
        with self._cond:
            if self._state != DONE and self._started:
                seq = self._command("export")
                deadline = time.monotonic() + timeout
                while self._state != DONE and (self._model is None or self._model[2] < seq):
                    if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                        break
            held = self._model
        if held is None:
            raise LabRefused("building", "The model is still being built; try again in a moment.")
        state, steps, _ = held
        task = Task(self.settings.task, self.settings.length, self.settings.symbols)
        model = build_model(self.settings, task)
        model.load_state_dict(torch.load(io.BytesIO(state), weights_only=True))
        return model.eval(), task, steps

    # ---- the pool's side ----------------------------------------------------------------------------------------
    def _admit(self) -> bool:
        """Queued -> running (the pool found a place); False when it is no longer waiting."""
        with self._cond:
            if self._state != QUEUED or self._stop:
                return False
            self._state = RUNNING
            self._command("run")
            return True

    @property
    def finished(self) -> bool:
        with self._cond:
            return self._state == DONE

    # ---- the run's thread ---------------------------------------------------------------------------------------
    def _command(self, name: str, *args) -> int:
        """Queue a command for the worker (called holding the condition); its sequence number."""
        self._seq += 1
        if name in ("pause", "step"):
            self._unacked.add(self._seq)
        self._outbox.append((name, self._seq, *args) if name != "run" else (name,))
        self._cond.notify_all()
        return self._seq

    def _main(self) -> None:
        process = conn = None
        try:
            if not self._wait_for_work():
                return
            process, conn = start_worker(self._pool.limits)
            with self._cond:
                self._started, self.worker_pid = True, process.pid
            limits = self._pool.limits
            conn.send_bytes(pickle.dumps((self.settings, self.budget, limits.cpu_seconds, limits.snapshot_every)))
            self._talk(process, conn)
        except Exception as err:  # a failed run says why on the page instead of dying silently
            with self._cond:
                self._reason, self._error = FAILED, f"{type(err).__name__}: {err}"
        finally:
            if conn is not None:
                conn.close()  # the worker sees the end of its stream and exits
            if process is not None:
                end_process(process)
            with self._cond:
                self._state = DONE
                self._reason = self._reason or FINISHED
                self._cond.notify_all()
            self._pool.release(self)

    def _wait_for_work(self) -> bool:
        """Wait without a process until there is a command for one (False: stopped before that)."""
        with self._cond:
            while not self._stop and not self._outbox:
                self._cond.wait(1.0)
                if not self._owner_here():
                    self._stop, self._reason = True, self._reason or SESSION_GONE
            return not self._stop

    def _talk(self, process: subprocess.Popen, conn: Connection) -> None:
        """Send commands, read messages, watch the owner, until the worker says it is done."""
        stop_sent, looked = None, 0.0
        while True:
            with self._cond:
                outbox, self._outbox = self._outbox, []
                stop = self._stop
            for command in outbox:
                conn.send_bytes(pickle.dumps(command))
            if stop and stop_sent is None:
                conn.send_bytes(pickle.dumps(("stop",)))
                stop_sent = time.monotonic()
            ready = conn.poll(POLL_SECONDS)
            while ready:  # every message waiting, then back to the commands
                try:
                    message = pickle.loads(conn.recv_bytes())
                except EOFError:
                    ended = f"the training process ended unexpectedly (exit code {process.poll()})"
                    raise RuntimeError(ended) from None
                if self._receive(message):
                    return
                ready = conn.poll(0)
            if time.monotonic() - looked > 1.0:
                looked = time.monotonic()
                if not self._owner_here():
                    self.stop(SESSION_GONE)
            if stop_sent is not None and time.monotonic() - stop_sent > STOP_WAIT:
                return  # the worker did not end in time: end_process kills it

    def _receive(self, message: tuple) -> bool:
        """One message of the worker; True when it was the last."""
        kind = message[0]
        with self._cond:
            if kind == "snapshot":
                self._keep(message[1])
                self._progress = message[2]
            elif kind == "progress":
                self._progress = message[1]
            elif kind == "ack":
                self._unacked.discard(message[1])
            elif kind == "model":
                self._model = (message[1], message[2], message[3] if message[3] >= 0 else self._seq)
            elif kind == "done":  # done now: the worker's exit (a moment more) is waited for after
                self._reason = self._reason or message[1]
                self._error = message[2]
                if message[1] == FAILED:
                    self._reason = FAILED
                self._state = DONE
            self._cond.notify_all()
        return kind == "done"

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


def end_process(process: subprocess.Popen, wait: float = 5.0) -> None:
    """Wait for a worker to exit; kill it when it does not within ``wait`` seconds."""
    try:
        process.wait(wait)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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
