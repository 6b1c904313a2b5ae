"""One training in a process of its own, at a lower CPU priority, driven over a socket by ``runner.Run``.

The server's interpreter then never runs a training step: a training cannot hold the interpreter's lock
or a core's share the pages need (the worker is ``os.nice``-d, so the server wins a contended core).

Protocol (pickled tuples, one per message, framed by ``multiprocessing.connection.Connection``):

* server -> worker: ``("run",)`` train on; ``("pause", seq)`` stop training, snapshot the step paused at;
  ``("step", seq, n)`` n steps and a snapshot; ``("export", seq)`` the weights now; ``("stop",)`` end.
* worker -> server: ``("snapshot", Snapshot, progress)``, ``("progress", progress)`` with
  progress = (steps, seconds, cpu_seconds); ``("ack", seq)``; ``("model", state_bytes, steps, seq)``;
  ``("done", reason, error)`` last (after a snapshot and the final weights), then the process exits.

The worker starts idle (the server sends "run" once the pool admits it) and exits when the server's
end of the socket closes (the server ended, or killed it): no training outlives its server.
"""

from __future__ import annotations

import io
import pickle
import time
from multiprocessing.connection import Connection

import torch

from .trainer import LabSettings, Trainer

CHUNK_SECONDS = 0.2  # training steps between two looks at the socket
FINISHED, CPU_CAP, STOPPED, FAILED = "finished", "cpu-cap", "stopped", "failed"


def model_bytes(model: torch.nn.Module) -> bytes:
    """The model's weights as ``torch.save`` writes a state_dict."""
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


class Worker:
    """The child's side: one Trainer, the commands it is sent, the messages it sends back."""

    def __init__(self, conn: Connection, settings: LabSettings, budget: float, cpu_cap: float, every: float) -> None:
        self.conn, self.budget, self.cpu_cap, self.every = conn, budget, cpu_cap, every
        self.trainer = Trainer(settings)
        self.running, self.last = False, self.trainer.snapshot()
        self.send(("snapshot", self.last, self.progress()))

    def send(self, message: tuple) -> None:
        self.conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def progress(self) -> tuple[int, float, float]:
        """(steps, seconds on the clock, seconds of training time: CPU time, what the budget counts)."""
        return self.trainer.steps, self.trainer.seconds, self.trainer.cpu_seconds

    def snapshot(self) -> None:
        self.last = self.trainer.snapshot()
        self.send(("snapshot", self.last, self.progress()))

    def handle(self, command: tuple) -> bool:
        """Do one command; False when the worker is to end."""
        name = command[0]
        if name == "run":
            self.running = True
        elif name == "pause":
            self.running = False
            if self.last.step != self.trainer.steps:  # a paused run shows the step it paused at
                self.snapshot()
            self.send(("ack", command[1]))
        elif name == "step":
            for _ in range(command[2]):
                self.trainer.step()
            self.snapshot()
            self.send(("ack", command[1]))
        elif name == "export":
            self.send(("model", model_bytes(self.trainer.model), self.trainer.steps, command[1]))
        elif name == "stop":
            return False
        return True

    def spent(self) -> bool:
        """Whether the training time is spent: counted in the training's own CPU time, so that a busy
        server makes a training take longer on the clock but never cuts it before what it is to show."""
        return self.trainer.cpu_seconds >= self.budget

    def train_chunk(self) -> None:
        until = time.perf_counter() + CHUNK_SECONDS
        while time.perf_counter() < until and not self.spent():
            self.trainer.step()
        if self.trainer.seconds - self.last.seconds >= self.every or self.spent():
            self.snapshot()
        else:
            self.send(("progress", self.progress()))

    def serve(self) -> str:
        """Commands and training until a stop, the time budget or the CPU cap; returns why it ended."""
        while True:
            while self.conn.poll(0 if self.running else 0.5):
                if not self.handle(pickle.loads(self.conn.recv_bytes())):
                    return STOPPED
            if self.running:
                self.train_chunk()
            if self.spent():
                return FINISHED
            if self.trainer.cpu_seconds >= self.cpu_cap:  # the clock the status line shows
                return CPU_CAP

    def finish(self, reason: str) -> None:
        if self.last.step != self.trainer.steps:
            self.snapshot()
        self.send(("model", model_bytes(self.trainer.model), self.trainer.steps, -1))
        self.send(("done", reason, None))


def main(fd: int) -> None:
    """The worker process (its priority already lowered by ``runner.WORKER_BOOT``): read its settings on
    the socket ``fd``, train as told."""
    torch.set_num_threads(1)  # its CPU time is then what the cap counts, and one worker takes one core
    conn = Connection(fd)
    try:
        settings, budget, cpu_cap, every = pickle.loads(conn.recv_bytes())
        worker = None
        try:
            worker = Worker(conn, settings, budget, cpu_cap, every)
            worker.finish(worker.serve())
        except (EOFError, BrokenPipeError, ConnectionResetError):
            return  # the server is gone: nothing to report to
        except Exception as err:  # a failed run says why on the page instead of dying silently
            conn.send_bytes(pickle.dumps(("done", FAILED, f"{type(err).__name__}: {err}")))
    except (EOFError, OSError):
        return
    finally:
        conn.close()
