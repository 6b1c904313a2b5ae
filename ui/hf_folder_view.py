"""Hugging Face model folders on the Checkpoints page: where one comes from (a zip, its files selected
together, a name on the Hub typed in its field), what was read from which file, the check against
``transformers``, and where the model goes once used (the sidebar, the Translate or the Vision page).

A source is what the page recognises once per ``file_id``: its ``name`` (the registry's display name)
and ``read()``, which returns a tagged upload (``transformer.checkpoints.upload_kinds``) or raises.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

import pandas as pd
import streamlit as st

from transformer.checkpoints import recognise_upload
from transformer.checkpoints.upload_kinds import HFFolderUpload
from transformer.hf.folder import MAX_WEIGHTS_MB
from transformer.hf.zipped import FOLDER_FILES

from . import session
from .echo import cut_to_limit
from .i18n import t
from .model_pages import kind_name, pages_text

HUB_NAME = session.value("ckpt_hub_opened")  # the Hub model name the user asked to open
HUB_FIELD = session.value("ckpt_hub_name")  # the Hub name field (a widget)
FILES_ZIP_NAME = "huggingface-files.zip"
TOLERANCE = 1e-5
HEAD_KEYS = {  # ImportedModel.head -> literal catalogue keys
    "sequence-classification": "checkpoints.hf_head_sequence_classification",
    "masked-lm": "checkpoints.hf_head_masked_lm",
    "language-model": "checkpoints.hf_head_language_model",
    "": "checkpoints.hf_head_bare",
}
EXTERNAL_TITLES = {"huggingface-vit": "ViT", "huggingface-marian": "Marian"}  # format -> family title
READ_AS = (  # file-name patterns -> literal catalogue keys
    ("config.json", "checkpoints.hf_read_config"),
    ("*.index.json", "checkpoints.hf_read_index"),
    ("*.safetensors", "checkpoints.hf_read_weights"),
    ("*.bin", "checkpoints.hf_read_weights"),
    ("preprocessor_config.json", "checkpoints.hf_read_preprocessor"),
    ("tokenizer_config.json", "checkpoints.hf_read_support"),
    ("special_tokens_map.json", "checkpoints.hf_read_support"),
    ("added_tokens.json", "checkpoints.hf_read_support"),
    ("tokenizer.json", "checkpoints.hf_read_tokenizer"),
    ("vocab.*", "checkpoints.hf_read_tokenizer"),
    ("target_vocab.json", "checkpoints.hf_read_tokenizer"),
    ("merges.txt", "checkpoints.hf_read_tokenizer"),
    ("*.spm", "checkpoints.hf_read_tokenizer"),
    ("*.gguf", "checkpoints.hf_read_gguf"),
)


@dataclass(frozen=True)
class UploadSource:
    """One uploaded file (a checkpoint, a zipped bundle or a zipped Hugging Face folder)."""

    name: str
    file_id: str
    data: bytes

    def read(self):
        return recognise_upload(self.name, self.data)


@dataclass(frozen=True)
class HubSource:
    """A model on the Hugging Face Hub, by name (downloaded, or taken from the user's cache)."""

    name: str

    @property
    def file_id(self) -> str:
        return "hub:" + self.name

    def read(self) -> HFFolderUpload:
        return open_hub(self.name)


def chosen_source(checkpoint, files) -> UploadSource | HubSource | None:
    """What the page opens: the uploaded file, else the folder's files selected together, else the Hub name."""
    return upload_source(checkpoint) or files_source(files) or hub_source()


def read_source(source, escape):
    """``source.read()``; a spinner names a Hub model while it is fetched."""
    if isinstance(source, HubSource):
        with st.spinner(t("checkpoints.hub_spinner", name=escape(source.name))):
            return source.read()
    return source.read()


def upload_source(upload) -> UploadSource | None:
    return None if upload is None else UploadSource(upload.name, upload.file_id, upload.getvalue())


def files_source(files) -> UploadSource | None:
    """A folder's files selected together, zipped (in memory, by base name) into one upload."""
    if not files:
        return None
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for file in files:
            archive.writestr(Path(file.name.replace("\\", "/")).name or "file", file.getvalue())
    return UploadSource(FILES_ZIP_NAME, "files:" + ",".join(sorted(f.file_id for f in files)), buffer.getvalue())


def open_hub(name: str) -> HFFolderUpload:
    """The Hub model ``name`` fetched (or found in the cache), opened and compared with the reference."""
    from transformer.hf import download, load_hf_folder
    from transformer.hf.reference import reference_check

    folder = download(name)
    loaded = load_hf_folder(folder)
    check = reference_check(folder, loaded)
    files = sorted(p for p in folder.iterdir() if p.is_file() and any(fnmatch(p.name, f) for f in FOLDER_FILES))
    return HFFolderUpload(loaded, tuple((p.name, p.stat().st_size) for p in files), check)


def files_uploader(column):
    """The uploader of a folder's files selected together (in ``column``); the files, or an empty list."""
    return column.file_uploader(
        t("checkpoints.uploader_hf_files"),
        None,
        accept_multiple_files=True,
        key="ckpt_hf_files",
        help=t("checkpoints.uploader_hf_files_help"),
    )


HUB_CHARS = 200  # a Hub name ("owner/model") is far shorter


def hub_field() -> None:
    """The Hub name field: 'Open' keeps the name (opened below, once per name)."""
    with st.expander(t("checkpoints.hub_title"), expanded=HUB_NAME.is_set):
        st.caption(hub_help())
        left, right = st.columns([4, 1], vertical_alignment="bottom")
        left.text_input(
            t("checkpoints.hub_field"),
            key=HUB_FIELD.key,
            placeholder=t("checkpoints.hub_placeholder"),
        )  # no max_chars: the browser would keep the old name in silence on a longer paste; cut, and said
        right.button(t("checkpoints.hub_button"), key="ckpt_hub_open", on_click=open_hub_name)
        if cut := cut_to_limit(HUB_FIELD.get() or "", HUB_CHARS)[1]:
            st.warning(cut)


def open_hub_name() -> None:
    """Button callback: the typed name is the one to open (empty: none)."""
    name = cut_to_limit(HUB_FIELD.get() or "", HUB_CHARS)[0].strip()
    if name:
        HUB_NAME.set(name)
    else:
        HUB_NAME.pop()


def hub_source() -> HubSource | None:
    name = HUB_NAME.get()
    return HubSource(name) if name else None


def hub_help() -> str:
    return t("checkpoints.hub_help", mb=f"{MAX_WEIGHTS_MB:,}")


def read_as(name: str) -> str:
    return next((t(key) for pattern, key in READ_AS if fnmatch(name, pattern)), t("checkpoints.hf_read_unused"))


def summary(loaded) -> str:
    """One line: the head (with its labels), layers × heads, width, vocabulary."""
    cfg = loaded.config
    head = getattr(loaded, "head", None)
    if head is None:  # a vision model (ViT) or a translator (Marian)
        if getattr(loaded, "vocab", None) is None:
            labels = len(getattr(cfg, "label_names", ()) or ())
            return t(
                "checkpoints.hf_summary_vision",
                labels=labels,
                layers=cfg.num_layers,
                heads=cfg.num_heads,
                d_model=cfg.d_model,
            )
        head_text = t("checkpoints.hf_head_translation")
    else:
        head_text = t(HEAD_KEYS.get(head, "checkpoints.hf_head_bare"), labels=", ".join(cfg.label_names))
    return t(
        "checkpoints.hf_summary",
        head=head_text,
        layers=cfg.num_layers,
        heads=cfg.num_heads,
        d_model=cfg.d_model,
        vocab=f"{len(loaded.vocab):,}",
    )


def show_hf_section(found: HFFolderUpload, fid: str, use, escape) -> None:
    """Everything between the upload and the 'Use this model' button (``use(fid)`` its callback)."""
    show_hf_upload(found, escape)
    st.caption(use_caption(found.loaded))
    st.button(t("checkpoints.use_button"), type="primary", on_click=use, args=(fid,), key="ckpt_use")


def is_vision(model) -> bool:
    """A ViT (no vocabulary): the Vision page offers it, not the sidebar's list of text models."""
    return getattr(model, "vocab", None) is None


def used_message(key: str, model) -> str:
    """Once 'Use this model' kept ``model`` under ``key``: where to find it."""
    return t("vision_upload.stored", key=key) if is_vision(model) else t("checkpoints.loaded", key=key)


def vision_link() -> None:
    st.page_link("pages/vision.py", label=t("vision_upload.open_vision"), icon="➡️")


def show_hf_upload(found: HFFolderUpload, escape) -> None:
    """What was read from which file, and the reference check; ``escape`` shows file text literally."""
    loaded = found.loaded
    st.subheader(t("checkpoints.hf_title", family=family_title(loaded)))
    st.markdown(escape(summary(loaded)))
    st.markdown(f"**{t('checkpoints.hf_read_title')}**")
    rows = [(name, _size(size), read_as(name)) for name, size in found.files]
    columns = [t("checkpoints.hf_col_file"), t("checkpoints.hf_col_size"), t("checkpoints.hf_col_read_as")]
    st.dataframe(pd.DataFrame(rows, columns=columns), hide_index=True, width="stretch", height=37 * (len(rows) + 1))
    if getattr(loaded, "type_summary", ""):  # a GGUF file: how each tensor was stored before dequantising
        st.caption(t("checkpoints.gguf_types", summary=escape(loaded.type_summary)))
    for note in getattr(loaded, "notes", ())[1:]:  # the first note is the table above in one English line
        st.caption(escape(note))
    show_check(found.check)


def family_title(loaded) -> str:
    """The family table's title ("BERT", "GPT-2"); ViT and Marian models are told by their format."""
    return getattr(loaded, "family", "") or EXTERNAL_TITLES.get(getattr(loaded, "format", ""), "")


def use_caption(loaded) -> str:
    """Where the model goes once used: the sidebar's text models, the Translate page, the Vision page."""
    if is_vision(loaded):
        return t("checkpoints.hf_use_caption_vision")
    if getattr(loaded, "target_vocab", None) is not None:
        return t("checkpoints.hf_use_caption_translation")
    return t("checkpoints.opens_on", kind=kind_name(loaded), pages=pages_text(loaded))


def show_check(check) -> None:
    """The largest differences against ``transformers`` (or why there is no comparison)."""
    from transformer.hf.reference import reference_available

    st.markdown(f"**{t('checkpoints.hf_check_title')}**")
    if check is None:
        st.caption(t("checkpoints.hf_check_missing" if not reference_available() else "checkpoints.hf_check_none"))
        return
    st.caption(check_caption(check))
    left, right = st.columns(2)
    left.metric(t("checkpoints.hf_check_attention"), f"{check.attention:.1e}")
    right.metric(t("checkpoints.hf_check_logits"), "—" if check.logits is None else f"{check.logits:.1e}")
    if check.parts:
        st.caption(t("checkpoints.hf_check_parts", **{part: f"{d:.1e}" for part, d in check.parts}))
    st.caption(t("checkpoints.hf_check_layers", values=layer_values(check)))
    worst = max(check.attention, check.logits or 0.0)
    if worst <= TOLERANCE:
        st.success(t("checkpoints.hf_check_equal"))
    else:
        st.warning(t("checkpoints.hf_check_differs"))


def check_caption(check) -> str:
    """What was compared, on which input (a sentence, a sentence and a forced decoder prefix, a picture)."""
    if check.picture:
        return t(
            "checkpoints.hf_check_caption_picture", reference=check.reference, side=check.picture, tokens=check.tokens
        )
    if check.prefix:
        return t(
            "checkpoints.hf_check_caption_translation",
            reference=check.reference,
            text=check.text,
            tokens=check.tokens,
            prefix=check.prefix,
        )
    return t("checkpoints.hf_check_caption", reference=check.reference, text=check.text, tokens=check.tokens)


def layer_values(check) -> str:
    """'1: 2.1e-07, 2: ...'; a translator's layers named by their stack ('encoder 1: ..., decoder 1: ...')."""
    if not check.prefix:
        return ", ".join(f"{i + 1}: {d:.1e}" for i, d in enumerate(check.per_layer))
    encoder, decoder = check.encoder_layers, len(check.per_layer) - check.encoder_layers
    names = [t("checkpoints.hf_check_encoder_layer", n=i + 1) for i in range(encoder)]
    names += [t("checkpoints.hf_check_decoder_layer", n=i + 1) for i in range(decoder)]
    return ", ".join(f"{name}: {d:.1e}" for name, d in zip(names, check.per_layer, strict=True))


def _size(size: int) -> str:
    return f"{size / 1024**2:,.1f} MB" if size >= 1024**2 else f"{size / 1024:,.1f} kB"
