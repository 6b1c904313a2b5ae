"""One decoding scheduler per process: every session's pending generation stepped together.

A caller hands over a :class:`~transformer.lm.decode.Decoding` and waits; one worker thread reads its prompt
up to the last token, with every other prompt waiting (:func:`~.batch_prompts.read_prompts`: one pass over the
weights for all of them), another steps every generation of the same model at once with
:func:`~.batch_step.batch_step` over their caches side by side (:class:`~.batch_cache.BatchCache`, kept while the
batch does not change): one read of the weights serves the class. A generation joins the batch at the next step
after its prompt is read (its last prompt token's step, the first prediction, is taken with the others') and
leaves it when done (continuous batching). A generation alone on its model, or a model the batched step does not
reproduce (:func:`~.batch_step.batch_matches`, checked once per model), is stepped alone: the same code as
``transformer.lm.decode.generate``.
"""

from __future__ import annotations

import threading
import weakref
from collections import defaultdict

import torch

from ..lm.decode import Decoding, Generation, step_alone
from .batch_cache import BatchCache
from .batch_prompts import read_prompts
from .batch_step import batch_matches, batch_step

MAX_BATCH = 64  # generations of one model stepped at once (more wait for the next step)
SPREAD = 64  # positions a batch's longest generation may have past twice its shortest's


def _length(decoding: Decoding) -> int:
    """The positions a generation's cache holds (its own or its batch's): every id read so far."""
    return len(decoding.ids) - len(decoding.pending)


class _Job:
    def __init__(self, decoding: Decoding) -> None:
        self.decoding = decoding
        self.finished = threading.Event()
        self.error: BaseException | None = None


class BatchingScheduler:
    """The in-process :class:`~transformer.serving.DecodingService`: two worker threads started on the first
    request, sleeping while there is nothing to do: one reads new prompts (all those waiting, together), one
    steps the generations whose prompt is read. Prompts are thus read on the other core while the batch is
    stepped, and never by many threads at once (20 sessions' threads each reading its prompt spent their time
    handing the interpreter's lock to one another: a torch call per operation, each taking the lock back)."""

    def __init__(self, max_batch: int = MAX_BATCH) -> None:
        self.max_batch = max_batch
        self._reading: list[_Job] = []  # prompts not read yet, first come first read
        self._jobs: list[_Job] = []  # generations the stepper steps
        self._wake = threading.Condition()
        self._workers: dict[str, threading.Thread] = {}
        self._checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> batch_matches
        # the generations stepped together, by their ids: (them, their caches side by side); while a generation
        # is in a batch its own ``cache`` is None (the batch holds its keys and values)
        self._batches: dict[tuple[int, ...], tuple[list[Decoding], BatchCache]] = {}
        self.steps_run = 0  # batched steps taken (for benches and tests)
        self.largest_batch = 0

    def generate(self, decoding: Decoding) -> Generation:
        """Run ``decoding`` to its end with every other pending one; returns its result (the caller waits).
        An error in the model's computation is raised here, in the caller's thread."""
        job = _Job(decoding)
        with self._wake:
            if decoding.done:
                return decoding.result()
            self._reading.append(job)
            self._start("decoding-prompts", self._read_prompts)
            self._start("decoding-scheduler", self._run)
            self._wake.notify_all()
        job.finished.wait()
        if job.error is not None:
            raise job.error
        return decoding.result()

    def _start(self, name: str, target) -> None:
        worker = self._workers.get(name)
        if worker is None or not worker.is_alive():
            self._workers[name] = threading.Thread(target=target, name=name, daemon=True)
            self._workers[name].start()

    def _read_prompts(self) -> None:
        """Every prompt waiting read up to its last token, those of one model together (``read_prompts``: one
        pass over the weights for all), then handed to the stepper."""
        torch.set_grad_enabled(False)
        while True:
            with self._wake:
                while not self._reading:
                    self._wake.wait()
                waiting, self._reading = self._reading[: self.max_batch], self._reading[self.max_batch :]
            by_model: dict[int, list[_Job]] = defaultdict(list)
            for job in waiting:
                by_model[id(job.decoding.model)].append(job)
            for jobs in by_model.values():
                self._read_group(jobs)
            with self._wake:
                self._jobs.extend(job for job in waiting if not job.finished.is_set())  # else: the caller has the error
                self._wake.notify_all()

    def _read_group(self, jobs: list[_Job]) -> None:
        """The prompts of one model's jobs, together when the model's batched step is checked; any that fails
        together is read alone, so one job's error reaches its caller only."""
        if len(jobs) > 1 and self._batchable(jobs[0].decoding.model):
            try:
                read_prompts([job.decoding for job in jobs])
            except Exception:  # noqa: BLE001 (each is read alone below, and its own error kept)
                pass
        for job in jobs:
            self._guarded([job], job.decoding.read_prompt)  # nothing left to read for those read together

    def _run(self) -> None:
        torch.set_grad_enabled(False)
        while True:
            with self._wake:
                while not self._jobs:
                    self._wake.wait()
                jobs = list(self._jobs)
            self._round(jobs)
            with self._wake:
                self._jobs = [job for job in self._jobs if not job.finished.is_set()]
                idle = not self._jobs
            if idle:  # nothing left to step: no batch keeps finished generations' caches while the worker sleeps
                self._keep_batches(set())

    def _round(self, jobs: list[_Job]) -> None:
        """One step of every job (its prompt already read by ``_read_prompts``): a one-token prompt, which has
        no cache yet, stepped alone; each model's running generations together."""
        in_batch = {id(d) for members, _ in self._batches.values() for d in members}
        running: dict[int, list[_Job]] = defaultdict(list)
        for job in jobs:
            if job.decoding.cache is None and id(job.decoding) not in in_batch:
                self._guarded([job], lambda j=job: step_alone(j.decoding))
            else:
                running[id(job.decoding.model)].append(job)
        parts = [part for group in running.values() for part in self._parts(group)]
        self._keep_batches({tuple(id(job.decoding) for job in part) for part in parts})
        for part in parts:
            self._guarded(part, lambda part=part: self._step(part))

    def _parts(self, jobs: list[_Job]) -> list[list[_Job]]:
        """One model's generations in batches of at most ``max_batch``, of similar lengths: shortest first, a
        batch's longest at most 2 x its shortest + SPREAD positions (the batch's caches are padded to its
        longest: one long prompt among short ones would otherwise pad every one of them to its length)."""
        parts: list[list[_Job]] = []
        for job in sorted(jobs, key=lambda j: _length(j.decoding)):
            part = parts[-1] if parts else None
            if part and len(part) < self.max_batch and _length(job.decoding) <= 2 * _length(part[0].decoding) + SPREAD:
                part.append(job)
            else:
                parts.append([job])
        return parts

    def _keep_batches(self, wanted: set[tuple[int, ...]]) -> None:
        """Every batch not stepped as it is this round gives each of its generations still running its own
        cache back (a generation joined or left it)."""
        for key in [key for key in self._batches if key not in wanted]:
            members, batch = self._batches.pop(key)
            for n, decoding in enumerate(members):
                if not decoding.done:
                    decoding.cache = batch.row(n)

    def _guarded(self, jobs: list[_Job], work) -> None:
        try:
            work()
        except Exception as error:  # the waiting callers get the error; the worker goes on with the others
            for job in jobs:
                job.error = error
                job.finished.set()
            return
        for job in jobs:
            if job.decoding.done:
                job.finished.set()

    def _step(self, jobs: list[_Job]) -> None:
        model = jobs[0].decoding.model
        if len(jobs) == 1 or not self._batchable(model):
            for job in jobs:
                step_alone(job.decoding)
            return
        decodings = [job.decoding for job in jobs]
        key = tuple(id(d) for d in decodings)
        if key not in self._batches:  # their caches side by side, held by the batch until it changes
            self._batches[key] = (decodings, BatchCache([d.cache for d in decodings]))
            for decoding in decodings:
                decoding.cache = None
        batch = self._batches[key][1]
        logits, rows = batch_step(model, [d.pending[0] for d in decodings], batch, [d.gate for d in decodings])
        self.steps_run += 1
        self.largest_batch = max(self.largest_batch, len(jobs))
        logits = logits.float()
        for n, decoding in enumerate(decodings):
            decoding.take(logits[n], rows[n])

    def _batchable(self, model) -> bool:
        if model not in self._checked:
            self._checked[model] = batch_matches(model)
        return self._checked[model]
