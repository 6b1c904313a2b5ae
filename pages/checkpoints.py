"""Checkpoints: upload a model trained elsewhere, see what was recognised, answer what the weights
cannot tell, and use it on every page. Uploads live in this browser session only."""

import pandas as pd
import streamlit as st

from transformer.bundle import LoadedModel, nonfinite_tensors
from transformer.checkpoints import MAX_FILE_MB, CourseViTUpload, Detection, asked, defaults, findings
from transformer.checkpoints.questions import FILLS, RANGES, saved_cap_problem, saved_problem
from transformer.checkpoints.upload_kinds import HFFolderUpload
from ui import hf_folder_view as hf
from ui import session
from ui.checkpoint_questions import (
    POSITIONAL_KEYS,
    QUESTION_TEXT,
    assumption_rows,
    default_pad_id,
    head_choices,
    within,
)
from ui.checkpoint_text import finding_text, problem_text, row_text
from ui.checkpoint_upload import (
    IMPORTED,
    MESSAGE,
    READ_ERRORS,
    plain,
    recognised,
    remember_pad_default,
    text_model_of,
    use_model,
    vocab_of,
)
from ui.echo import cut_to_limit
from ui.i18n import current_lang, t
from ui.language import check, languages_of
from ui.language import message as language_message
from ui.model_pages import kind_name, pages_text
from ui.models import run_analysis, uploaded_models
from ui.upload_memory import note_this_session
from ui.vision_upload import vision_upload_form

HOW_TO_SAVE = """# in your notebook, after training
torch.save(model.state_dict(), "model.pt")
# a torchtext vocabulary, one token per line (line number = id)
with open("vocab.txt", "w", encoding="utf-8") as f:
    f.write("\\n".join(vocab.get_itos()) + "\\n")"""


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
        options = head_choices(d.d_model)
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


def ask(d: Detection, fid: str, pad_default: int) -> None:
    st.subheader(t("checkpoints.asked_title"))
    st.caption(t("checkpoints.asked_caption"))
    keys, values = asked(d), defaults(d)
    pad_default = values["pad_id"] if values["pad_id"] is not None else pad_default
    remember_pad_default(fid, pad_default)
    problem = saved_problem(d, pad_default)  # the command line's check of the same values
    if problem is not None:
        st.error(t("checkpoints.saved_problem", problem=plain(problem)))
    for start in range(0, len(keys), 3):
        for column, key in zip(st.columns(3), keys[start : start + 3]):
            with column:
                question_widget(key, d, values[key], fid, pad_default)
                st.caption(t(QUESTION_TEXT[key][1]))


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
    bad = nonfinite_tensors(d.raw.state)
    if bad:
        st.warning(t("checkpoints.nonfinite_weights", names=plain(", ".join(bad[:5]))))


def show_assumptions(loaded: LoadedModel) -> None:
    """Each assumed value and its source (the user, the checkpoint, the family's default, the vocabulary)."""
    if not loaded.assumptions:
        return
    st.subheader(t("checkpoints.assumptions_title"))
    st.caption(t("checkpoints.assumptions_caption"))
    rows = assumption_rows(loaded.assumptions, current_lang())
    columns = [t("checkpoints.col_setting"), t("checkpoints.col_used"), t("checkpoints.col_source")]
    st.dataframe(pd.DataFrame(rows, columns=columns), hide_index=True, width="stretch", height=37 * (len(rows) + 1))


def try_it() -> None:
    """A quick run of the selected upload on one sentence: tokens the model saw and its prediction."""
    selection = session.selection()
    if selection is None or not selection.is_upload:
        return
    st.subheader(t("checkpoints.try_title", key=selection.model_key))
    # no max_chars: the browser would keep the old text in silence when a longer one is pasted; cut here, said
    text, cut = cut_to_limit(st.text_input(t("checkpoints.try_sentence"), "the movie was great", key="ckpt_try"), 500)
    if cut:
        st.warning(cut)
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
        ask(result, fid, default_pad_id(vocab, result.raw.itos))
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
