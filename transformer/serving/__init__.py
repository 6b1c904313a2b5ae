"""Serving many sessions from one process: the seam between the app and the engine.

The engine (``transformer.core``) knows nothing of sessions; a page asks a :class:`DecodingService`
for a generation and waits. The one here (:class:`~.scheduler.BatchingScheduler`) steps every pending
generation of the process together on this machine; a model service shared by several replicas, or
one on a GPU machine, would implement the same one method.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

import torch

from ..lm.decode import Decoding, Generation, step_alone
from .scheduler import BatchingScheduler


class DecodingService(Protocol):
    def generate(self, decoding: Decoding) -> Generation:
        """Run ``decoding`` (a prompt, its settings and its model) to its end; the caller waits for it."""
        ...


class AloneService:
    """Each generation run alone in its caller's thread (the app before the scheduler)."""

    @torch.no_grad()
    def generate(self, decoding: Decoding) -> Generation:
        while not decoding.done:
            step_alone(decoding)
        return decoding.result()


def batching_enabled() -> bool:
    """Whether generations are batched (``ATTENTION_LAB_BATCH_DECODING=0`` turns it off)."""
    return os.environ.get("ATTENTION_LAB_BATCH_DECODING", "1") != "0"


_service: DecodingService | None = None
_lock = threading.Lock()


def decoding_service() -> DecodingService:
    """This process's service: the batching scheduler unless ``ATTENTION_LAB_BATCH_DECODING=0`` (each
    generation then runs alone in its caller's thread, as before the scheduler, for comparison)."""
    global _service
    with _lock:
        if _service is None:
            _service = BatchingScheduler() if batching_enabled() else AloneService()
        return _service


__all__ = ["AloneService", "BatchingScheduler", "batching_enabled", "DecodingService", "decoding_service"]
