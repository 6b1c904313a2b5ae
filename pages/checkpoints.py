"""Checkpoints: upload a model trained elsewhere, see what was recognised, answer what the weights
cannot tell, and use it on every page. Uploads live in this browser session only."""

import pandas as pd
import streamlit as st
import torch

from transformer.bundle import LoadedModel
from transformer.checkpoints import (
    MAX_FILE_MB,
    BundleUpload,
    CheckpointError,
    CourseViTUpload,
    Detection,
    TextCheckpoint,
    asked,
    defaults,
    findings,
    import_detected,
    read_vocab_upload,
)
from transformer.checkpoints.options import ImportOptions
from transformer.checkpoints.questions import FILLS, RANGES, saved_cap_problem, saved_problem
from transformer.checkpoints.upload_kinds import HFFolderUpload
from ui import hf_folder_view as hf
from ui import session
from ui.checkpoint_text import Problem, finding_text, problem_of, problem_text, row_text
from ui.i18n import current_lang, t
from ui.language import check, languages_of
from ui.language import message as language_message
from ui.model_pages import kind_name, pages_text
from ui.models import run_analysis, uploaded_models
from ui.upload_memory import budget_error, held_bytes, note_this_session
from ui.vision_upload import vision_upload_form

VOCABS = session.value("ckpt_vocabs")  # {role: (file id, Vocab or None, error or None)}
MESSAGE = session.value("ckpt_message")  # (kind, text, file id) of the last import
IMPORTED = session.value("ckpt_imported")  # (file id, upload key) of the file imported last
MAX_UPLOADS = 3  # per browser session: each upload stays in this server's memory until removed or the tab closes
# every failure a file can cause while read or built (RecursionError is a RuntimeError): a message, never a crash
READ_ERRORS = (CheckpointError, ValueError, OSError, RuntimeError, MemoryError, TypeError, KeyError, IndexError)
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
POSITIONAL_KEYS = {"sinusoidal": "checkpoints.positional_sinusoidal", "none": "checkpoints.positional_none"}
HOW_TO_SAVE = """# in your notebook, after training
torch.save(model.state_dict(), "model.pt")
# a torchtext vocabulary, one token per line (line number = id)
with open("vocab.txt", "w", encoding="utf-8") as f:
    f.write("\\n".join(vocab.get_itos()) + "\\n")"""


def plain(text: str) -> str:
    """Text from a file (names, keys) shown literally: every markdown character escaped."""
    return "".join("\\" + c if c in "\\`*_{}[]()#+-.!|<>~$:=" else c for c in str(text))


def recognised(upload) -> dict:
    """{'result': Upload | None, 'error': Problem | None}: the source read once (one child process for an
    uploaded file) and recognised as a text checkpoint, a bundle, a course ViT or a Hugging Face folder,
    once per uploaded file or Hub name."""
    pending = session.pending_upload()
    if pending is None or pending["file_id"] != upload.file_id:
        session.forget_pending_upload()  # the previous file's tensors go before the next is read
        try:
            result = hf.read_source(upload, plain)
            over = budget_error(held_bytes(result))
            error = Problem(over) if over is not None else None
        except READ_ERRORS as err:
            result, error = None, problem_of(err)
        if error is not None:
            result = None
        pending = {"file_id": upload.file_id, "name": upload.name, "result": result, "error": error}
        session.set_pending_upload(pending)
    return pending


def text_model_of(found) -> LoadedModel | Detection | None:
    """A bundle's model, a text checkpoint's detection; None for another kind (a course ViT)."""
    if isinstance(found, (BundleUpload, HFFolderUpload)):
        return found.loaded
    return found.detection if isinstance(found, TextCheckpoint) else None


def vocab_of(upload, role: str):
    """(Vocab or None, error or None) of the file in the ``role`` uploader, read once per file."""
    cache = VOCABS.setdefault({})
    if upload is None:
        cache.pop(role, None)
        return None, None
    if cache.get(role, (None,))[0] != upload.file_id:
        cache.pop(role, None)
        try:
            vocab = read_vocab_upload(upload.name, upload.getvalue())
            error = budget_error(held_bytes(vocab))
            cache[role] = (upload.file_id, None if error else vocab, error)
        except READ_ERRORS as err:
            cache[role] = (upload.file_id, None, str(err))
    return cache[role][1:]


def show_recognised(d: Detection) -> None:
    st.subheader(t("checkpoints.recognised"))
    lang = current_lang()
    rows = [(row_text(row, lang), finding_text(value, lang)) for row, value in findings(d)]
    table = pd.DataFrame(rows, columns=[t("checkpoints.col_inferred"), t("checkpoints.col_value")])
    st.dataframe(table, hide_index=True, width="stretch", height=37 * (len(table) + 1))  # every row, no scroll
    for note in d.notes:
        st.caption(plain(finding_text(note, lang)))


def question_widget(key: str, d: Detection, default, fid: str, pad_default: int):
    """One widget for one question, keyed by the file so a new upload starts from its defaults.
    Limits come from the data (the embedding's rows, the app's length cap), never fixed numbers."""
    label, why = t(QUESTION_TEXT[key][0]), t(QUESTION_TEXT[key][1])
    wkey = f"ckpt_{key}_{fid}"
    if key == "num_heads":
        options = [h for h in range(1, min(d.d_model, 64) + 1) if d.d_model % h == 0]
        return st.selectbox(label, options, options.index(default) if default in options else 0, key=wkey, help=why)
    if key == "pooling":
        choices = ["mean", "first", "max"]
        return st.selectbox(label, choices, choices.index(default) if default in choices else 0, key=wkey, help=why)
    if key == "label_names":
        return st.text_input(label, ", ".join(default), key=wkey, help=why)
    if key in ("scale_embedding", "norm_first"):
        return st.toggle(label, bool(default), key=wkey, help=why)
    if key == "pad_id":
        top = d.vocab_size - 1
        return st.number_input(label, 0, top, within(pad_default, 0, top), key=wkey, help=why)
    if key == "mask_fill":
        fills = list(dict.fromkeys((default, *FILLS)))
        return st.selectbox(label, fills, 0, key=wkey, help=why, format_func=lambda v: f"{v:g}")
    if key == "activation":
        return st.selectbox(label, ["relu", "gelu"], ["relu", "gelu"].index(default), key=wkey, help=why)
    if key == "positional":
        choices = list(POSITIONAL_KEYS)
        index = choices.index(default) if default in choices else 0
        return st.selectbox(label, choices, index, key=wkey, help=why, format_func=lambda v: t(POSITIONAL_KEYS[v]))
    low, high = RANGES[key]  # pe_base, max_len: the ranges the CLI checks
    step = 1000.0 if key == "pe_base" else 1
    if key == "pe_base":
        low, high, default = float(low), float(high), float(default)
    return st.number_input(label, low, high, within(default, low, high), step=step, key=wkey, help=why)


def within(value, low, high):
    """``value`` when the widget can show it, else None (an empty box: a saved value beyond the
    range is not silently replaced; the problem is shown above the questions, as the CLI says it)."""
    return value if low <= value <= high else None


def ask(d: Detection, fid: str, pad_default: int) -> None:
    st.subheader(t("checkpoints.asked_title"))
    st.caption(t("checkpoints.asked_caption"))
    keys, values = asked(d), defaults(d)
    pad_default = values["pad_id"] if values["pad_id"] is not None else pad_default
    session.value(f"ckpt_pad_default_{fid}").set(pad_default)
    problem = saved_problem(d, pad_default)  # the command line's check of the same values
    if problem is not None:
        st.error(t("checkpoints.saved_problem", problem=plain(problem)))
    for start in range(0, len(keys), 3):
        for column, key in zip(st.columns(3), keys[start : start + 3]):
            with column:
                question_widget(key, d, values[key], fid, pad_default)
                st.caption(t(QUESTION_TEXT[key][1]))


def options_from_state(d: Detection, fid: str) -> ImportOptions:
    """The answers as ImportOptions, read from the widgets' session state (in the button's callback).
    An answer left at its default is not passed, so its source stays the checkpoint or the family."""
    values = {key: st.session_state.get(f"ckpt_{key}_{fid}") for key in asked(d)}
    if values.get("label_names") is not None:
        values["label_names"] = tuple(n.strip() for n in values["label_names"].split(",") if n.strip())
    for key, kind in (("pad_id", int), ("max_len", int), ("pe_base", float)):
        if values.get(key) is not None:
            values[key] = kind(values[key])
    unchanged = dict(defaults(d), pad_id=session.value(f"ckpt_pad_default_{fid}").get())
    return ImportOptions(**{k: v for k, v in values.items() if v is not None and v != unchanged.get(k)})


def shown_vocab(role: str):
    """The vocabulary read from the ``role`` uploader (what the page showed), or None."""
    entry = VOCABS.get({}).get(role)
    return entry[1] if entry else None


def use_model(fid: str) -> None:
    """Button callback (runs before the next rerun, so it may set the sidebar's model). It takes
    the file and its vocabularies from the session's state, never as arguments: a widget keeps its
    callback's arguments as long as the session lives, so they would outlive the upload's release."""
    pending = session.pending_upload()
    if pending is None or pending["file_id"] != fid:
        return
    result = text_model_of(pending["result"])
    if result is None:
        return
    vocab = shown_vocab("source")
    target_vocab = shown_vocab("target") if isinstance(result, Detection) and result.decoder is not None else None
    key = session.upload_key(pending["name"])
    uploads = session.uploads()  # uploaded_models() may call st.rerun(), which would cut a callback short
    if key not in uploads and len(uploads) >= MAX_UPLOADS:
        MESSAGE.set(("error", t("checkpoints.too_many_uploads", limit=MAX_UPLOADS), fid))
        return
    try:
        if isinstance(result, Detection):
            result = import_detected(result, options_from_state(result, fid), "cpu", vocab, target_vocab)
    except READ_ERRORS as err:
        MESSAGE.set(("error", str(err), fid))
        return
    replaced = uploads.get(key)
    replaced_bytes = held_bytes(replaced) if replaced is not None else 0
    error = budget_error(held_bytes(result) - replaced_bytes, (session.PENDING_UPLOAD_KEY,))
    if error is not None:
        MESSAGE.set(("error", error, fid))
        return
    session.add_upload(key, result)
    if not hf.is_vision(result):
        session.select_model(key)
    IMPORTED.set((fid, key))
    session.forget_pending_upload()  # the raw tensors are no longer needed
    MESSAGE.set(("success", hf.used_message(key, result), fid))


def show_message(checkpoint) -> None:
    """The last import's outcome, while its file is still the one uploaded (kept across reruns)."""
    kind, text, fid = MESSAGE.get((None, None, None))
    if checkpoint is None or fid != checkpoint.file_id:
        MESSAGE.pop()
    elif kind == "error":
        st.error(plain(text))
    elif kind == "success":
        st.success(plain(text))


def imported_note(key: str) -> None:
    """Below the one success message: what was assumed, and how to answer again."""
    loaded = uploaded_models().get(key)
    if loaded is not None:
        show_health(loaded)
        show_assumptions(loaded)
    elif key in session.uploads():  # a Hugging Face ViT
        hf.vision_link()
    st.caption(t("checkpoints.imported_note"))
    st.button(t("checkpoints.import_again"), key="ckpt_again", on_click=IMPORTED.pop)


def show_health(loaded: LoadedModel) -> None:
    if loaded.nonfinite_weights:
        st.warning(t("checkpoints.nonfinite_weights", names=plain(", ".join(loaded.nonfinite_weights[:5]))))


def show_raw_health(d: Detection) -> None:
    """Weights holding NaN or ±inf, named before the model is built (it can be used; its outputs cannot be shown)."""
    bad = [k for k, v in d.raw.state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        st.warning(t("checkpoints.nonfinite_weights", names=plain(", ".join(bad[:5]))))


def show_assumptions(loaded: LoadedModel) -> None:
    """Each assumed value and its source (the user, the checkpoint, the family's default, the vocabulary)."""
    if not loaded.assumptions:
        return
    st.subheader(t("checkpoints.assumptions_title"))
    st.caption(t("checkpoints.assumptions_caption"))
    names = {"bos": t("checkpoints.setting_bos"), "eos": t("checkpoints.setting_eos")}
    rows = [
        (
            names.get(k) or (t(QUESTION_TEXT[k][0]) if k in QUESTION_TEXT else k),
            _shown(v["value"]),
            t(SOURCE_KEYS[v["source"]]) if v["source"] in SOURCE_KEYS else v["source"],
        )
        for k, v in loaded.assumptions.items()
    ]
    columns = [t("checkpoints.col_setting"), t("checkpoints.col_used"), t("checkpoints.col_source")]
    st.dataframe(pd.DataFrame(rows, columns=columns), hide_index=True, width="stretch", height=37 * (len(rows) + 1))


def _shown(value) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, float):
        return f"{value:g}"
    return "—" if value is None else str(value)


def try_it() -> None:
    """A quick run of the selected upload on one sentence: tokens the model saw and its prediction."""
    selection = session.selection()
    if selection is None or not selection.is_upload:
        return
    st.subheader(t("checkpoints.try_title", key=selection.model_key))
    text = st.text_input(t("checkpoints.try_sentence"), "the movie was great", key="ckpt_try", max_chars=500)
    try:
        result = run_analysis(selection, [text])
    except READ_ERRORS as err:
        st.warning(plain(str(err)))
        return
    if result.nonfinite:
        st.warning(t("checkpoints.nonfinite_result", fields=", ".join(result.nonfinite)))
    unknown = [t("checkpoints.yes") if u else "" for u in result.unknown[0]]
    ids = [str(i) for i in result.ids[0, : len(unknown)]]  # all text: one column mixes the three rows
    rows = {t("checkpoints.row_token"): result.tokens[0], t("checkpoints.row_id"): ids}
    rows[t("checkpoints.row_unknown")] = unknown
    left, right = st.columns([2, 1])
    left.dataframe(pd.DataFrame(rows).T, width="stretch")
    tried = uploaded_models()[selection.model_key]
    prediction = result.prediction(0)
    if result.decoder_tokens is not None:
        right.markdown(t("checkpoints.decoder_output"))
        right.text(" ".join(result.decoder_tokens[0]))
    elif result.probabilities is None:
        right.info(t("checkpoints.no_prediction_kind", kind=kind_name(tried), pages=pages_text(tried)))
    elif prediction is None:
        right.warning(t("checkpoints.no_prediction"))
    elif not (found := check(text, languages_of(selection, uploaded_models().get(selection.model_key)))).ok:
        right.warning(language_message(found))
    else:
        right.metric(t("checkpoints.prediction"), prediction["label"])
        right.caption(t("checkpoints.probability", p=max(prediction["probabilities"].values())))
    shape = result.attention_for(0).shape
    size = dict(layers=shape[0], heads=shape[1], rows=shape[2], cols=shape[3])
    st.caption(t("checkpoints.attention_shape", **size, pages=pages_text(tried)))


def show_uploads() -> None:
    uploads = uploaded_models()
    if not uploads:
        return
    st.subheader(t("checkpoints.uploads_title"))
    for key, loaded in list(uploads.items()):
        cfg = loaded.config
        left, right = st.columns([5, 1])
        left.markdown(
            t(
                "checkpoints.upload_row",
                key=plain(key),
                format=plain(loaded.format),
                kind=kind_name(loaded),
                d_model=cfg.d_model,
                layers=cfg.num_layers,
                heads=cfg.num_heads,
                vocab=len(loaded.vocab),
            )
        )
        right.button(t("checkpoints.remove"), key=f"ckpt_remove_{key}", on_click=session.forget_upload, args=(key,))


def intro() -> None:
    st.title(t("checkpoints.title"))
    st.markdown(t("checkpoints.intro"))
    with st.expander(t("checkpoints.files_expander")):
        st.markdown(t("checkpoints.files_help", mb=MAX_FILE_MB))
        st.markdown(t("checkpoints.hf_files_help", mb=MAX_FILE_MB))
        st.code(HOW_TO_SAVE, language="python")


def recognised_section(upload, vocab_upload) -> None:
    """Everything between the upload and the 'Use this model' button."""
    pending = recognised(upload)
    if pending["error"]:
        st.error(plain(problem_text(pending["error"], current_lang())))
        return
    upload_found, fid = pending["result"], upload.file_id
    if isinstance(upload_found, HFFolderUpload):
        hf.show_hf_section(upload_found, fid, use_model, plain)
        return
    if isinstance(upload_found, CourseViTUpload):  # the Vision page's model: asked for in its own form
        vision_upload_form(upload.name, upload_found.state, upload_found.hints)
        return
    result = text_model_of(upload_found)
    vocab, vocab_error = vocab_of(vocab_upload, "source")
    if vocab_error:
        st.error(plain(vocab_error))
    target_vocab = None
    if isinstance(result, LoadedModel):
        st.info(t("checkpoints.bundled_info", kind=plain(result.config.kind), d_model=result.config.d_model))
        show_health(result)
    else:
        show_recognised(result)
        show_raw_health(result)
        refused = saved_cap_problem(result)  # the CLI refuses such a file with this message too
        if refused is not None:
            st.error(plain(refused))
            return
        if result.decoder is not None:
            target_upload = st.file_uploader(
                t("checkpoints.uploader_target"),
                ["txt", "json"],
                key="ckpt_target_vocab",
                max_upload_size=64,
                help=t("checkpoints.uploader_target_help"),
            )
            target_vocab, target_error = vocab_of(target_upload, "target")
            if target_error:
                st.error(plain(target_error))
        if vocab is None and result.raw.itos is None:
            st.warning(t("checkpoints.need_vocab"))
            return
        if result.vocab_size == 0:
            st.error(t("checkpoints.empty_embedding"))
            return
        itos = result.raw.itos or []
        ask(result, fid, vocab.pad_id if vocab is not None else itos.index("<pad>") if "<pad>" in itos else 1)
    st.button(t("checkpoints.use_button"), type="primary", on_click=use_model, args=(fid,), key="ckpt_use")


def main() -> None:
    """The page. Its names are local: a module global (e.g. the uploaded file) would outlive the run in
    the script's module, which Streamlit keeps as ``__main__`` until another run replaces it."""
    note_this_session()  # its uploads are counted and released when the browser has gone
    intro()
    top_left, top_right = st.columns(2)
    checkpoint = top_left.file_uploader(
        t("checkpoints.uploader_checkpoint"),
        ["pt", "pth", "bin", "safetensors", "zip", "gguf"],
        key="ckpt_file",
        help=t("checkpoints.uploader_checkpoint_help"),
    )
    vocab_file = top_right.file_uploader(
        t("checkpoints.uploader_vocab"),
        ["txt", "json"],
        key="ckpt_vocab",
        max_upload_size=64,
        help=t("checkpoints.uploader_vocab_help"),
    )
    hf_files = hf.files_uploader(top_left)
    hf.hub_field()
    source = hf.chosen_source(checkpoint, hf_files)
    show_message(source)
    imported_id, imported_key = IMPORTED.get((None, None))
    if source is not None and imported_id == source.file_id and imported_key in session.uploads():
        imported_note(imported_key)
    elif source is not None:
        recognised_section(source, vocab_file)
    else:
        session.forget_pending_upload()  # the file was taken out of the uploader: free its tensors
    try_it()
    show_uploads()


main()
