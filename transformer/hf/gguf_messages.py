"""A GGUF file's refusals in the file's own words: the Hugging Face importers a GGUF file goes through
speak of a ``config.json`` and of Hugging Face's tensor names; a GGUF file has neither, so their
refusals are said again with the metadata and llama.cpp's names (``blk.0.attn_q.weight``)."""

from __future__ import annotations

import re

from ..checkpoints.errors import CodedError, shown
from .folder import CONFIG_FILE, DOWNLOAD_HINT
from .gguf_names import GGUF_NAMES, LAYER_NAMES

HF_LAYER = re.compile(r"(?<![\w.])(?:model\.)?layers\.(\d+)\.([\w.]+?)\.(weight|bias)\b")
HF_TOP = re.compile(r"(?<![\w.])(?:model\.)?(embed_tokens|norm|lm_head)\.(weight|bias)\b")


def gguf_name_of(hf: str, architecture: str = "") -> str:
    """``model.layers.3.self_attn.q_proj.weight`` -> ``blk.3.attn_q.weight`` (the name as a file of
    ``architecture`` lists it); a name the tables do not know is returned as it is (escaped and cut)."""
    names = dict(LAYER_NAMES)
    if architecture == "gemma3":
        from .gemma3_gguf import LAYER_NAMES as GEMMA3_NAMES

        names.update(GEMMA3_NAMES)
    layer = {v: k for k, v in names.items()}
    top = {v.removeprefix("model."): k for k, v in GGUF_NAMES.items()}
    found = HF_LAYER.fullmatch(hf)
    if found and found.group(2) in layer:
        return f"blk.{found.group(1)}.{layer[found.group(2)]}.{found.group(3)}"
    found = HF_TOP.fullmatch(hf)
    if found and found.group(1) in top:
        return f"{top[found.group(1)]}.{found.group(2)}"
    return shown(hf)


def _renamed(text: str, architecture: str) -> str:
    text = HF_LAYER.sub(lambda m: gguf_name_of(m.group(0), architecture), text)
    return HF_TOP.sub(lambda m: gguf_name_of(m.group(0), architecture), text)


def gguf_settings_error(err: Exception, file: str, architecture: str = "") -> CodedError:
    """An importer's refusal of the settings a GGUF file's metadata gave (its sizes over the app's caps, a
    tensor the settings imply but the file lacks) as a CodedError that names the metadata, not a config.json."""
    text = _renamed(str(err), architecture)
    text = text.replace("the weights and the config do not belong together", "the file is incomplete")
    text = text.replace(f"{CONFIG_FILE} implies", "its metadata implies").replace(CONFIG_FILE, "the metadata")
    text = text.replace(DOWNLOAD_HINT, "download the file again")
    text = text.replace("describes a model this app cannot build: ", "")
    text = shown(text.rstrip("."), 400)
    message = f"{file}: its metadata describes a model this app cannot build ({text})."
    return CodedError("gguf_settings", message, file=file, detail=text)


def nonfinite_file_note(names: tuple[str, ...], file: str) -> str:
    """The note for tensors that hold NaN or ±inf once dequantised, in the file's names: a GGUF file was not
    trained here, so the file (its scales, its bytes) is to blame, not a learning rate."""
    listed = ", ".join(gguf_name_of(n) for n in names[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
    return (
        f"{len(names)} tensor(s) of {file} hold NaN or infinite values once dequantised: {listed}. The file is "
        "damaged or was quantised wrongly (download it again); outputs that depend on them cannot be shown."
    )
