"""The questions the Checkpoints page asks about an uploaded checkpoint, and the table of what was
assumed: the catalogue keys of each question, the choices a widget offers (from the file's own sizes,
never fixed numbers), the answers turned into :class:`ImportOptions`, and an import's assumptions as
rows in the reader's language. Pure functions: the page only draws them."""

from __future__ import annotations

from collections.abc import Mapping

from transformer.checkpoints.options import ImportOptions

from .i18n import translate

QUESTION_TEXT = {  # key -> (label, why): literal catalogue keys
    "num_heads": ("checkpoints.q_num_heads", "checkpoints.q_num_heads_why"),
    "pooling": ("checkpoints.q_pooling", "checkpoints.q_pooling_why"),
    "label_names": ("checkpoints.q_label_names", "checkpoints.q_label_names_why"),
    "scale_embedding": ("checkpoints.q_scale_embedding", "checkpoints.q_scale_embedding_why"),
    "pad_id": ("checkpoints.q_pad_id", "checkpoints.q_pad_id_why"),
    "mask_fill": ("checkpoints.q_mask_fill", "checkpoints.q_mask_fill_why"),
    "norm_first": ("checkpoints.q_norm_first", "checkpoints.q_norm_first_why"),
    "activation": ("checkpoints.q_activation", "checkpoints.q_activation_why"),
    "positional": ("checkpoints.q_positional", "checkpoints.q_positional_why"),
    "pe_base": ("checkpoints.q_pe_base", "checkpoints.q_pe_base_why"),
    "max_len": ("checkpoints.q_max_len", "checkpoints.q_max_len_why"),
}
SOURCE_KEYS = {
    "user": "checkpoints.source_user",
    "checkpoint": "checkpoints.source_checkpoint",
    "family default": "checkpoints.source_family_default",
    "vocabulary": "checkpoints.source_vocabulary",
}
SETTING_KEYS = {"bos": "checkpoints.setting_bos", "eos": "checkpoints.setting_eos"}
POSITIONAL_KEYS = {"sinusoidal": "checkpoints.positional_sinusoidal", "none": "checkpoints.positional_none"}
MAX_HEADS = 64


def head_choices(d_model: int) -> list[int]:
    """The head counts a width of ``d_model`` can be split into (each head gets d_model / h columns)."""
    return [h for h in range(1, min(d_model, MAX_HEADS) + 1) if d_model % h == 0]


def within(value, low, high):
    """``value`` when the widget can show it, else None (an empty box: a saved value beyond the
    range is not silently replaced; the problem is shown above the questions, as the CLI says it)."""
    return value if low <= value <= high else None


def default_pad_id(vocab, itos: list[str] | None) -> int:
    """The padding id offered first: the uploaded vocabulary's, else ``<pad>``'s row in the checkpoint's
    own token list, else 1 (torchtext's usual ``<pad>``)."""
    if vocab is not None:
        return vocab.pad_id
    return itos.index("<pad>") if itos and "<pad>" in itos else 1


def answers_to_options(answers: Mapping[str, object], unchanged: Mapping[str, object]) -> ImportOptions:
    """The widgets' ``answers`` (by question key) as ImportOptions. An answer left empty or at its
    ``unchanged`` default is not passed, so its source stays the checkpoint or the family."""
    values = dict(answers)
    if values.get("label_names") is not None:
        values["label_names"] = tuple(n.strip() for n in str(values["label_names"]).split(",") if n.strip())
    for key, kind in (("pad_id", int), ("max_len", int), ("pe_base", float)):
        if values.get(key) is not None:
            values[key] = kind(values[key])
    return ImportOptions(**{k: v for k, v in values.items() if v is not None and v != unchanged.get(k)})


def shown_value(value) -> str:
    """An assumed value as the table shows it: lists joined, floats short, None a dash."""
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, float):
        return f"{value:g}"
    return "—" if value is None else str(value)


def assumption_rows(assumptions: Mapping[str, dict], lang: str) -> list[tuple[str, str, str]]:
    """(setting, value used, where it came from) per assumed value, in ``lang``; a setting or source the
    catalogue does not name is shown as it is."""
    rows = []
    for key, item in assumptions.items():
        label = SETTING_KEYS.get(key) or (QUESTION_TEXT[key][0] if key in QUESTION_TEXT else None)
        source = SOURCE_KEYS.get(item["source"])
        rows.append(
            (
                translate(label, lang) if label else key,
                shown_value(item["value"]),
                translate(source, lang) if source else item["source"],
            )
        )
    return rows
