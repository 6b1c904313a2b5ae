"""A trained lab model as the app's other pages take it: a ``LoadedModel`` with its vocabulary and a
word-level tokenizer (one token per symbol), or a bundled-model folder (``tokenizer.json`` included).

The Generate page then continues a typed prompt such as ``3 1 4 >`` and the head atlas scores its
heads, as for any language model."""

from __future__ import annotations

import platform
from pathlib import Path

from tokenizers import Regex, Tokenizer, models, pre_tokenizers
from torch import nn

from ..bundle import save_bundle
from ..core.bpe import TOKENIZER_FILE
from ..core.loaded import LoadedModel
from ..core.tokenizer import Vocab
from .tasks import FIRST_SYMBOL, SEP, SPECIALS, UNK, Task
from .trainer import HELD_OUT_ROWS, LabSettings, Snapshot, Trainer


def lab_vocab(task: Task) -> Vocab:
    return Vocab(task.vocab)


def lab_tokenizer(task: Task) -> Tokenizer:
    """One token per symbol, spaces optional: ``3 1 4 >`` and ``314>`` give the same ids."""
    tok = Tokenizer(models.WordLevel({token: i for i, token in enumerate(task.vocab)}, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex("."), behavior="isolated")]
    )
    tok.add_special_tokens([t for t in SPECIALS if t != SEP])
    return tok


def lab_metrics(settings: LabSettings, snapshot: Snapshot) -> dict:
    """metrics.json of a lab model: the task, the settings, what was measured and where."""
    task = Task(settings.task, settings.length, settings.symbols)
    return {
        "task": task.name,
        "settings": settings.to_dict(),
        "held_out": {"accuracy": snapshot.accuracy, "exact": snapshot.exact, "rows": HELD_OUT_ROWS},
        "steps": snapshot.step,
        "training_seconds": round(snapshot.seconds, 2),
        "device": f"cpu ({platform.machine()}), one thread",
        "induction": {"best": float(snapshot.induction.max()), "probe_ids": [FIRST_SYMBOL, task.vocab_size]},
        "previous": {"best": float(snapshot.previous.max())},
    }


def to_loaded(model: nn.Module, task: Task, name: str, metrics: dict | None = None) -> LoadedModel:
    """The app's view of a trained lab model (kept by the caller: the model is not copied)."""
    return LoadedModel(
        model.eval(), model.config, lab_vocab(task), name=name, metrics=metrics, lm_tokenizer=lab_tokenizer(task)
    )


def save_lab_model(folder: str | Path, trainer: Trainer, snapshot: Snapshot) -> Path:
    """A bundled-model folder (config, weights, vocabulary, metrics, tokenizer.json)."""
    folder = save_bundle(
        folder, trainer.model, trainer.model.config, lab_vocab(trainer.task), lab_metrics(trainer.settings, snapshot)
    )
    lab_tokenizer(trainer.task).save(str(Path(folder) / TOKENIZER_FILE))
    return folder
