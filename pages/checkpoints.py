"""Checkpoints: upload a model trained elsewhere, see what was recognised, answer what the weights
cannot tell, and use it on every page. Uploads live in this browser session only."""

import pandas as pd
import streamlit as st

from transformer.bundle import LoadedModel
from transformer.checkpoints import (
    MAX_FILE_MB,
    QUESTIONS,
    CheckpointError,
    Detection,
    asked,
    defaults,
    import_detected,
    read_upload,
    read_vocab_upload,
    summary,
)
from transformer.checkpoints.questions import FILLS
from transformer.loader import ImportOptions
from ui.models import MEMO_KEY, UPLOAD_PREFIX, UPLOADS_KEY, run_analysis, uploaded_models

PENDING, VOCABS, MESSAGE, IMPORTED = "ckpt_pending", "ckpt_vocabs", "ckpt_message", "ckpt_imported"
MAX_UPLOADS = 3  # per browser session: each upload stays in this server's memory until removed or the tab closes
READ_ERRORS = (CheckpointError, ValueError, OSError, RuntimeError, MemoryError)
HOW_TO_SAVE = """# in your notebook, after training
torch.save(model.state_dict(), "model.pt")
# a torchtext vocabulary, one token per line (line number = id)
with open("vocab.txt", "w", encoding="utf-8") as f:
    f.write("\\n".join(vocab.get_itos()) + "\\n")"""


def plain(text: str) -> str:
    """Text from a file (names, keys) shown literally: every markdown character escaped."""
    return "".join("\\" + c if c in "\\`*_{}[]()#+-.!|<>~$:=" else c for c in str(text))


def recognised(upload) -> dict:
    """{'result': Detection | LoadedModel | None, 'error': str | None}, read once per uploaded file."""
    pending = st.session_state.get(PENDING)
    if pending is None or pending["file_id"] != upload.file_id:
        try:
            result, error = read_upload(upload.name, upload.getvalue()), None
        except READ_ERRORS as err:
            result, error = None, str(err)
        pending = {"file_id": upload.file_id, "name": upload.name, "result": result, "error": error}
        st.session_state[PENDING] = pending
    return pending


def vocab_of(upload, role: str):
    """(Vocab or None, error or None) of the file in the ``role`` uploader, read once per file."""
    cache = st.session_state.setdefault(VOCABS, {})
    if upload is None:
        cache.pop(role, None)
        return None, None
    if cache.get(role, (None,))[0] != upload.file_id:
        try:
            cache[role] = (upload.file_id, read_vocab_upload(upload.name, upload.getvalue()), None)
        except READ_ERRORS as err:
            cache[role] = (upload.file_id, None, str(err))
    return cache[role][1:]


def show_recognised(d: Detection) -> None:
    st.subheader("What was recognised")
    table = pd.DataFrame(summary(d), columns=["Inferred from the weights", "Value"])
    st.dataframe(table, hide_index=True, width="stretch", height=37 * (len(table) + 1))  # every row, no scroll
    for note in d.notes:
        st.caption(plain(note))


def question_widget(key: str, d: Detection, default, fid: str, pad_default: int):
    """One widget for one question, keyed by the file so a new upload starts from its defaults."""
    label, why = QUESTIONS[key]
    wkey = f"ckpt_{key}_{fid}"
    if key == "num_heads":
        options = [h for h in range(1, min(d.d_model, 64) + 1) if d.d_model % h == 0]
        return st.selectbox(label, options, options.index(default) if default in options else 0, key=wkey, help=why)
    if key == "pooling":
        choices = ["mean", "first", "max"]
        return st.selectbox(label, choices, choices.index(default) if default in choices else 0, key=wkey, help=why)
    if key == "label_names":
        return st.text_input(label + " (comma-separated)", ", ".join(default), key=wkey, help=why)
    if key in ("scale_embedding", "norm_first"):
        return st.toggle(label, bool(default), key=wkey, help=why)
    if key == "pad_id":
        return st.number_input(label, 0, d.vocab_size - 1, min(pad_default, d.vocab_size - 1), key=wkey, help=why)
    if key == "mask_fill":
        fills = list(dict.fromkeys((default, *FILLS)))
        return st.selectbox(label, fills, 0, key=wkey, help=why, format_func=lambda v: f"{v:g}")
    if key == "activation":
        return st.selectbox(label, ["relu", "gelu"], ["relu", "gelu"].index(default), key=wkey, help=why)
    return st.number_input(label, 1, 4096, int(default), key=wkey, help=why)


def ask(d: Detection, fid: str, pad_default: int) -> None:
    st.subheader("What the weights cannot tell")
    st.caption("Each answer has a default. Use what your training code used.")
    keys, values = asked(d), defaults(d)
    for start in range(0, len(keys), 3):
        for column, key in zip(st.columns(3), keys[start : start + 3]):
            with column:
                question_widget(key, d, values[key], fid, pad_default)
                st.caption(QUESTIONS[key][1])


def options_from_state(d: Detection, fid: str) -> ImportOptions:
    """The answers as ImportOptions, read from the widgets' session state (in the button's callback)."""
    values = {key: st.session_state.get(f"ckpt_{key}_{fid}") for key in asked(d)}
    if values.get("label_names") is not None:
        values["label_names"] = tuple(n.strip() for n in values["label_names"].split(",") if n.strip())
    if values.get("pad_id") is not None:
        values["pad_id"] = int(values["pad_id"])
    return ImportOptions(**{k: v for k, v in values.items() if v is not None})


def forget_results(key: str) -> None:
    """Drop this session's memoised analyses of ``key`` (its model was replaced or removed)."""
    memo = st.session_state.get(MEMO_KEY, {})
    for memo_key in [k for k in memo if k[0] == key]:
        del memo[memo_key]


def session_uploads() -> dict:
    """This session's uploads, for callbacks: uploaded_models() may call st.rerun(), which would cut a
    callback short (the dict and its key are the same)."""
    return st.session_state.setdefault(UPLOADS_KEY, {})


def use_model(fid: str, vocab, target_vocab) -> None:
    """Button callback (runs before the next rerun, so it may set the sidebar's model)."""
    pending = st.session_state.get(PENDING)
    if pending is None or pending["file_id"] != fid:
        return
    key = UPLOAD_PREFIX + pending["name"]
    uploads = session_uploads()
    if key not in uploads and len(uploads) >= MAX_UPLOADS:
        st.session_state[MESSAGE] = (
            "error",
            f"At most {MAX_UPLOADS} uploads per session: remove one below first.",
            fid,
        )
        return
    try:
        result = pending["result"]
        if not isinstance(result, LoadedModel):
            result = import_detected(result, options_from_state(result, fid), "cpu", vocab, target_vocab)
    except READ_ERRORS as err:
        st.session_state[MESSAGE] = ("error", str(err), fid)
        return
    forget_results(key)
    uploads[key] = result
    st.session_state["model"] = key
    st.session_state[IMPORTED] = (fid, key)
    del st.session_state[PENDING]  # the raw tensors are no longer needed
    st.session_state[MESSAGE] = ("success", f"Loaded {key}: it is selected in the sidebar for every page.", fid)


def remove_upload(key: str) -> None:
    session_uploads().pop(key, None)
    forget_results(key)
    if st.session_state.get("model") == key:
        st.session_state.pop("model", None)


def show_message(checkpoint) -> None:
    """The last import's outcome, while its file is still the one uploaded (kept across reruns)."""
    kind, text, fid = st.session_state.get(MESSAGE, (None, None, None))
    if checkpoint is None or fid != checkpoint.file_id:
        st.session_state.pop(MESSAGE, None)
    elif kind == "error":
        st.error(plain(text))
    elif kind == "success":
        st.success(plain(text))


def imported_note(key: str) -> None:
    st.info(f"This file is loaded as {plain(key)}. To answer the questions differently, import it again.")
    st.button("Import again", key="ckpt_again", on_click=lambda: st.session_state.pop(IMPORTED, None))


def try_it() -> None:
    """A quick run of the selected upload on one sentence: tokens the model saw and its prediction."""
    selection = st.session_state.get("selection")
    if selection is None or not selection.is_upload:
        return
    st.subheader(f"Try {selection.model_key}")
    text = st.text_input("A sentence", "the movie was great", key="ckpt_try", max_chars=500)
    try:
        result = run_analysis(selection, [text])
    except (ValueError, RuntimeError) as err:
        st.warning(plain(str(err)))
        return
    unknown = ["yes" if u else "" for u in result.unknown[0]]
    ids = [str(i) for i in result.ids[0, : len(unknown)]]  # all text: one column mixes the three rows
    rows = {"token": result.tokens[0], "id": ids, "not in vocabulary": unknown}
    left, right = st.columns([2, 1])
    left.dataframe(pd.DataFrame(rows).T, width="stretch")
    prediction = result.prediction(0)
    if result.decoder_tokens is not None:
        right.markdown("**Decoder output** (greedy)")
        right.text(" ".join(result.decoder_tokens[0]))
    elif prediction is None:
        right.info("This model has no usable classifier head: see its attention on the Attention page.")
    else:
        right.metric("Prediction", prediction["label"])
        right.caption(f"p = {max(prediction['probabilities'].values()):.3f}")
    shape = result.attention_for(0).shape
    st.caption(
        f"Attention: {shape[0]} layers × {shape[1]} heads × {shape[2]} × {shape[3]} tokens. "
        "Open the Attention, Masks or Classifier page to explore it."
    )


def show_uploads() -> None:
    uploads = uploaded_models()
    if not uploads:
        return
    st.subheader("Your uploads (this browser session only)")
    for key, loaded in list(uploads.items()):
        cfg = loaded.config
        left, right = st.columns([5, 1])
        left.markdown(
            f"**{plain(key)}** — {plain(loaded.format)}, {cfg.kind}, d_model {cfg.d_model}, "
            f"{cfg.num_layers} layers × {cfg.num_heads} heads, vocabulary {len(loaded.vocab):,}"
        )
        right.button("Remove", key=f"ckpt_remove_{key}", on_click=remove_upload, args=(key,))


def intro() -> None:
    st.title("Your own checkpoint")
    st.markdown(
        "Upload a Transformer you trained in a course notebook or tutorial to see inside it. Files are read "
        "without running any code from them, and stay in **this browser session only**: nobody else sees them, "
        "and they are dropped when you close the tab."
    )
    with st.expander("Which files work, and how to save them"):
        st.markdown(
            f"- **Weights**: `.pt` / `.pth` / `.bin` saved with `torch.save(model.state_dict(), …)` (or a dict "
            "holding it under `model`, `model_state_dict` or `state_dict`), `.safetensors`, or a bundled model "
            f"folder zipped (`.zip`). Up to {MAX_FILE_MB} MB.\n"
            "- **Recognised code**: PyTorch `nn.TransformerEncoder` / `nn.Transformer`; the course notebook "
            "encoder (`Wq`, `Wk`, `Wv`, `Wo`); `W_Q`/`W_K`/`W_V`/`fc` and `w_q`/`w_k`/`w_v`/`w_concat` "
            "encoder-decoders; a fused `qkv_layer`; this app's own models.\n"
            "- **Vocabulary**: `vocab.txt` (one token per line, line number = id) or a JSON list; it needs "
            "`<unk>` and `<pad>`."
        )
        st.code(HOW_TO_SAVE, language="python")


def recognised_section(upload, vocab_upload) -> None:
    """Everything between the upload and the 'Use this model' button."""
    pending = recognised(upload)
    if pending["error"]:
        st.error(plain(pending["error"]))
        return
    result, fid = pending["result"], upload.file_id
    vocab, vocab_error = vocab_of(vocab_upload, "source")
    if vocab_error:
        st.error(plain(vocab_error))
    target_vocab = None
    if isinstance(result, LoadedModel):
        st.info(
            f"A bundled model ({plain(result.config.kind)}, d_model {result.config.d_model}): its config and "
            "vocabulary come with it."
        )
    else:
        show_recognised(result)
        if result.decoder is not None:
            target_upload = st.file_uploader(
                "Target vocabulary (encoder-decoder)",
                ["txt", "json"],
                key="ckpt_target_vocab",
                max_upload_size=64,
                help="The decoder's vocabulary, if it has its own; without one the source vocabulary is used.",
            )
            target_vocab, target_error = vocab_of(target_upload, "target")
            if target_error:
                st.error(plain(target_error))
        if vocab is None and result.raw.itos is None:
            st.warning("Upload the vocabulary the model was trained with (right above) to use it.")
            return
        itos = result.raw.itos or []
        ask(result, fid, vocab.pad_id if vocab is not None else itos.index("<pad>") if "<pad>" in itos else 1)
    st.button("Use this model", type="primary", on_click=use_model, args=(fid, vocab, target_vocab), key="ckpt_use")


intro()
top_left, top_right = st.columns(2)
checkpoint = top_left.file_uploader(
    "Checkpoint",
    ["pt", "pth", "bin", "safetensors", "zip"],
    key="ckpt_file",
    help="Nothing in the file is executed: pickles are opened with PyTorch's "
    "weights-only loader, and anything but tensors is refused.",
)
vocab_file = top_right.file_uploader(
    "Vocabulary",
    ["txt", "json"],
    key="ckpt_vocab",
    max_upload_size=64,
    help="vocab.txt or a JSON list of tokens (id = position). Not needed when the checkpoint stores an 'itos' list.",
)
show_message(checkpoint)
imported_id, imported_key = st.session_state.get(IMPORTED, (None, None))
if checkpoint is not None and imported_id == checkpoint.file_id and imported_key in uploaded_models():
    imported_note(imported_key)
elif checkpoint is not None:
    recognised_section(checkpoint, vocab_file)
else:
    st.session_state.pop(PENDING, None)  # the file was taken out of the uploader: free its tensors
try_it()
show_uploads()
