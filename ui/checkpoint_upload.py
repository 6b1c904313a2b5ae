"""What the Checkpoints page keeps of an upload in this session, and what its button does: the source
read once per file (and its vocabularies once per file), the outcome of the last import, and the
"Use this model" callback that imports, checks the memory budget and puts the model in the registry.
Nothing here draws: the page lays out what these return."""

from __future__ import annotations

from transformer.bundle import LoadedModel
from transformer.checkpoints import (
    BundleUpload,
    CheckpointError,
    Detection,
    TextCheckpoint,
    asked,
    defaults,
    import_detected,
    read_vocab_upload,
)
from transformer.checkpoints.options import ImportOptions
from transformer.checkpoints.upload_kinds import HFFolderUpload

from . import hf_folder_view as hf
from . import session
from .checkpoint_questions import answers_to_options
from .checkpoint_text import Problem, problem_of
from .i18n import t
from .upload_memory import budget_error, held_bytes

VOCABS = session.value("ckpt_vocabs")  # {role: (file id, Vocab or None, error or None)}
MESSAGE = session.value("ckpt_message")  # (kind, text, file id) of the last import
IMPORTED = session.value("ckpt_imported")  # (file id, upload key) of the file imported last
MAX_UPLOADS = 3  # per browser session: each upload stays in this server's memory until removed or the tab closes
# every failure a file can cause while read or built (RecursionError is a RuntimeError): a message, never a crash
READ_ERRORS = (CheckpointError, ValueError, OSError, RuntimeError, MemoryError, TypeError, KeyError, IndexError)


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


def shown_vocab(role: str):
    """The vocabulary read from the ``role`` uploader (what the page showed), or None."""
    entry = VOCABS.get({}).get(role)
    return entry[1] if entry else None


def remember_pad_default(fid: str, pad_id: int) -> None:
    """The padding id the questions offered for file ``fid``: an answer equal to it is no answer."""
    session.value(f"ckpt_pad_default_{fid}").set(pad_id)


def options_from_state(d: Detection, fid: str) -> ImportOptions:
    """The answers as ImportOptions, read from the widgets' session state (in the button's callback)."""
    answers = {key: session.value(f"ckpt_{key}_{fid}").get() for key in asked(d)}
    unchanged = dict(defaults(d), pad_id=session.value(f"ckpt_pad_default_{fid}").get())
    return answers_to_options(answers, unchanged)


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
