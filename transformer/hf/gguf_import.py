"""Open a GGUF file (llama.cpp, Ollama, LM Studio) in our engine through the same family table as a
Hugging Face folder: the file is a reader that yields a config, named tensors and a tokenizer; the
Llama-family row (:func:`~transformer.hf.llama.import_llama`) maps them.

    loaded = load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")     # a GGUFModel every page can use
    loaded.chat_template, loaded.add_bos, loaded.tensor_types   # what the file says
    ids = chat_ids(loaded, [{"role": "user", "content": "Hi"}])  # a conversation through its template

What the reader yields, from llama.cpp's names: the config as transformers' GGUF loader reads it
(``llama.block_count`` -> ``num_hidden_layers`` ...; tied when the file has no ``output.weight``;
Mistral models are ``llama`` files, run as Llama by llama.cpp and by transformers), the tensors under Hugging
Face's names, dequantised to float32, with the row order of the query and key projections that
llama.cpp's converter writes for ``llama`` files (each head's rotary pairs interleaved) undone exactly
as transformers undoes it (``qwen2`` files are written unpermuted). Order of the checks, each a
:class:`CodedError` naming the file: the header (counts, lengths, shapes, types, every tensor inside
the file), the architecture, the config, the mapped shapes against the model the config describes
(meta tensors: nothing read yet), the tokenizer against the embedding; then the tensors are read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..bundle import nonfinite_tensors
from ..checkpoints.errors import CodedError, shown
from .families import BY_TYPE, importer_of
from .gguf_file import GGUFFile, gguf_error, read_gguf, read_tensors
from .gguf_messages import gguf_name_of, gguf_settings_error, nonfinite_file_note
from .gguf_names import GGUF_NAMES, LAYER_NAMES
from .gguf_package import joined_path, packaged_file, read_manifest
from .gguf_tokenizer import GGUFTokenizer, gguf_tokenizer
from .importer import _encoder, build, check_fits, read_metrics, with_weights
from .loaded import ImportedModel
from .mapping import LANGUAGE_MODEL, CheckpointError

FORMAT = "gguf"
SUFFIX = ".gguf"
ARCHITECTURES = ("llama", "qwen2", "gemma3")  # general.architecture values read here (Mistral files say "llama")
MAX_FILE_MB = 1024  # the app's cap on weights: a 4-bit file this big holds far more than 200M parameters
MAX_FLOAT_BYTES = 200_000_000 * 4  # the dequantised model: the app's cap of 200M parameters in float32


@dataclass(frozen=True)
class GGUFModel(ImportedModel):
    """An imported GGUF file: ``chat_template`` (the file's Jinja template, "" when none), ``add_bos``
    (whether its tokenizer puts the start token first), ``tensor_types`` ({"Q4_1": 210, ...}) and
    ``type_summary`` (the count per type and which tensors), ``gguf_tokenizer`` (what was built)."""

    chat_template: str = ""
    add_bos: bool = False
    tensor_types: dict[str, int] = field(default_factory=dict)
    type_summary: str = ""
    gguf_tokenizer: GGUFTokenizer | None = None


def is_gguf(path: str | Path) -> bool:
    """A file named ``*.gguf`` or starting with the GGUF magic."""
    path = Path(path)
    if not path.is_file():
        return False
    if path.suffix.lower() == SUFFIX:
        return True
    with open(path, "rb") as handle:
        return handle.read(4) == b"GGUF"


def gguf_in_folder(folder: str | Path) -> Path | None:
    """The one ``.gguf`` file of a model folder without a config.json (a bundled GGUF model:
    ``assets/models/smollm2-135m-instruct/``), else None."""
    found = gguf_files(folder)
    return found[0] if len(found) == 1 else None


def gguf_files(folder: str | Path) -> list[Path]:
    """The ``.gguf`` files of a folder without a config.json (none for a Hugging Face or bundled folder); for a
    folder whose file is installed as packages in chunks (``gguf_package.json``), where the joined file lives
    (joined at first load: ``gguf_package.py``)."""
    folder = Path(folder)
    if not folder.is_dir() or (folder / "config.json").exists():
        return []
    if (manifest := read_manifest(folder)) is not None:
        return [joined_path(folder, manifest)]
    return sorted(p for p in folder.iterdir() if p.suffix.lower() == SUFFIX and p.is_file())


def load_gguf_folder(folder: str | Path, device: str | torch.device = "cpu") -> GGUFModel:
    """A model folder holding one GGUF file (and its LICENSE, metrics.json) as a :class:`GGUFModel` named
    after the folder, its metrics.json kept."""
    folder = Path(folder)
    found = gguf_files(folder)
    if len(found) != 1:
        listed = ", ".join(p.name for p in found[:4]) or "none"
        message = f"{folder.name} holds {len(found)} .gguf files ({listed}): open one file, or keep one per folder."
        raise gguf_error("several", message, file=folder.name, count=len(found))
    path = packaged_file(folder) if read_manifest(folder) is not None else found[0]
    loaded = load_gguf(path, device)
    return dataclasses.replace(loaded, name=folder.name, metrics=read_metrics(folder))


def check_gguf(path: str | Path, max_mb: float = MAX_FILE_MB) -> tuple[GGUFFile, dict, GGUFTokenizer]:
    """Every check that needs no tensor read: the file's size, its header, the architecture and config, the
    mapped shapes against the model the config describes, the tokenizer against the embedding. Returns
    (the header, the Hugging Face config, the tokenizer); CodedError naming the file otherwise. The
    Checkpoints page runs this in its isolated reader before the server loads the file."""
    path = Path(path)
    size = path.stat().st_size
    if size > max_mb * 1024**2:
        mb, limit = f"{size / 1024**2:,.0f}", f"{max_mb:,.0f}"
        message = (
            f"{path.name} is {mb} MB; this app opens GGUF files up to {limit} MB (models of about 200M "
            "parameters). Choose a smaller model."
        )
        raise gguf_error("too_big", message, file=path.name, mb=mb, limit=limit)
    file = read_gguf(path)
    hf = gguf_config(file)
    convert = importer_of(BY_TYPE[hf["model_type"]])
    try:
        imported = convert(hf, meta_weights(file, hf), path.name)
    except CodedError:
        raise
    except CheckpointError as err:  # the importer speaks of a config.json: this file has none
        raise gguf_settings_error(err, path.name, file.architecture) from err
    _check_shapes(imported, path.name, file.architecture)  # before any tensor is read
    return file, hf, gguf_tokenizer(file, hf["vocab_size"])


def load_gguf(path: str | Path, device: str | torch.device = "cpu", max_mb: float = MAX_FILE_MB) -> GGUFModel:
    """The GGUF file at ``path`` as a :class:`GGUFModel` on ``device`` in eval mode (see the module docstring)."""
    path = Path(path)
    file, hf, built = check_gguf(path, max_mb)
    family = BY_TYPE[hf["model_type"]]
    convert = importer_of(family)
    imported = convert(hf, hf_weights(file, hf), path.name)
    with torch.device("meta"):
        model = build(imported)
    model = with_weights(model, imported.state)
    encoder = _encoder(built.tokenizer, built.specials, imported, path.name, path.name)
    bad = nonfinite_tensors(imported.state)
    summary = file.type_summary()
    notes = (
        f"{family.title} read from the GGUF file {path.name} (architecture {file.architecture!r}); tensors "
        f"dequantised to float32 from {summary}.",
    )
    notes += imported.notes + ((nonfinite_file_note(bad, path.name),) if bad else ())
    return GGUFModel(
        model.to(device).eval(),
        imported.config,
        encoder.vocab,
        None,
        path.name,
        FORMAT,
        None,
        notes,
        nonfinite_weights=bad,
        lm_tokenizer=built.tokenizer if imported.head == LANGUAGE_MODEL else None,
        encoder=encoder,
        family=family.title,
        head=imported.head,
        sources={"config": path.name, "weights": path.name, "tokenizer": path.name},
        chat_template=built.chat_template,
        add_bos=built.add_bos,
        tensor_types=file.type_counts(),
        type_summary=summary,
        gguf_tokenizer=built,
    )


def gguf_config(file: GGUFFile) -> dict:
    """The file's metadata as a Hugging Face config (what transformers' GGUF loader reads from it);
    CodedError naming the key when a value is missing or not a positive integer."""
    arch, name = file.architecture, file.path.name
    if arch not in ARCHITECTURES:
        supported = ", ".join(ARCHITECTURES) + " (Mistral files say llama)"
        message = f"{name} holds a {shown(arch)!r} model; this app opens GGUF files of the architectures {supported}."
        raise gguf_error("architecture", message, file=name, architecture=repr(shown(arch)), supported=supported)
    meta = file.metadata
    model_type = arch  # Mistral files are "llama" ones: llama.cpp and transformers run them as Llama
    hf = {
        "model_type": model_type,
        "hidden_size": _count(file, f"{arch}.embedding_length"),
        "num_hidden_layers": _count(file, f"{arch}.block_count"),
        "intermediate_size": _count(file, f"{arch}.feed_forward_length"),
        "num_attention_heads": _count(file, f"{arch}.attention.head_count"),
        "max_position_embeddings": _count(file, f"{arch}.context_length", 2048),
        "rms_norm_eps": _number(file, f"{arch}.attention.layer_norm_rms_epsilon", 1e-6),
        "rope_theta": _number(file, f"{arch}.rope.freq_base", 10000.0),
        "hidden_act": "silu",
        "tie_word_embeddings": file.tensor("output.weight") is None,
        "attention_bias": file.tensor("blk.0.attn_q.bias") is not None,
    }
    hf["num_key_value_heads"] = _count(file, f"{arch}.attention.head_count_kv", hf["num_attention_heads"])
    embedding = file.tensor("token_embd.weight")
    if embedding is None or len(embedding.shape) != 2:
        raise gguf_error(
            "missing_tensor",
            f"{name} has no token embedding (token_embd.weight): {DAMAGED_HINT}.",
            file=name,
            tensor="token_embd.weight",
        )
    hf["vocab_size"] = _count(file, f"{arch}.vocab_size", embedding.shape[0])
    if hf["vocab_size"] != embedding.shape[0]:
        rows, said = f"{embedding.shape[0]:,}", f"{hf['vocab_size']:,}"
        message = f"{name} says {arch}.vocab_size {said} but its token embedding has {rows} rows: {DAMAGED_HINT}."
        raise gguf_error("vocab_rows", message, file=name, vocab=said, rows=rows)
    width = hf["hidden_size"] // hf["num_attention_heads"]
    if arch == "gemma3":  # wider heads, local layers, its own norms: its row reads them (hf/gemma3_gguf.py)
        from .gemma3_gguf import gemma3_settings

        hf.update(gemma3_settings(file, _count, _number))
    elif model_type != "qwen2":  # llama.cpp writes the rotary width as head_dim for llama files
        hf["head_dim"] = _count(file, f"{arch}.rope.dimension_count", width)
    if arch != "gemma3" and (hf.get("head_dim", width) != width or hf["hidden_size"] % hf["num_attention_heads"]):
        message = (
            f"{name}: heads of {hf.get('head_dim', width)} dimensions do not split the hidden size "
            f"{hf['hidden_size']} into {hf['num_attention_heads']} heads; this app's heads split it evenly."
        )
        raise gguf_error("head_dim", message, file=name)
    for key, role in (("bos_token_id", "bos"), ("eos_token_id", "eos"), ("pad_token_id", "padding")):
        value = meta.get(f"tokenizer.ggml.{role}_token_id")
        if isinstance(value, int) and not isinstance(value, bool):
            hf[key] = value
    _refuse_scaled_rotary(file, arch)
    return hf


def _check_shapes(imported, name: str, architecture: str = "") -> None:
    """check_fits in the file's words: its metadata, not a config.json, describes the model."""
    try:
        check_fits(imported, name)
    except CodedError as err:
        if err.code == "missing_tensor":
            tensor = gguf_name_of(str(err.values.get("tensor", "")), architecture)
            message = f"{name} has no tensor {tensor}, which its metadata implies: {DAMAGED_HINT}."
            raise gguf_error("missing_tensor", message, file=name, tensor=tensor) from err
        tensor = gguf_name_of(str(err.values.get("tensor", "")), architecture)
        message = (
            f"{name}: {tensor} has shape {err.values.get('shape', 'none')}, but the "
            f"file's metadata describes {err.values.get('expected', 'another')}: the file is damaged or was "
            "written wrongly; download it again."
        )
        raise gguf_error("shape_mismatch", message, file=name, tensor=tensor) from err


DAMAGED_HINT = "the file is damaged or not a language model: download it again"


def _count(file: GGUFFile, key: str, default: int | None = None) -> int:
    value = file.metadata.get(key, default)
    if value is None:
        message = f"{file.path.name} lacks {key}, which a {shown(file.architecture)} model needs: {DAMAGED_HINT}."
        raise gguf_error("missing_key", message, file=file.path.name, key=key)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**31:
        said = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else shown(value)
        message = (
            f"{file.path.name}: {key} must be a positive integer below 2,147,483,648 (2³¹), not {said}: {DAMAGED_HINT}."
        )
        raise gguf_error("not_count", message, file=file.path.name, key=key, value=said)
    return value


def _number(file: GGUFFile, key: str, default: float) -> float:
    value = file.metadata.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e12:
        message = f"{file.path.name}: {key} must be a positive number below 10¹², not {shown(value)}: {DAMAGED_HINT}."
        raise gguf_error("not_number", message, file=file.path.name, key=key, value=shown(value))
    return float(value)


def _refuse_scaled_rotary(file: GGUFFile, arch: str) -> None:
    """Rotary positions scaled for long contexts (Llama 3.1's ``rope_freqs.weight``, ``rope.scaling.type``)
    are refused, not approximated."""
    scaling = file.metadata.get(f"{arch}.rope.scaling.type", "none")
    if file.tensor("rope_freqs.weight") is not None or scaling not in ("none", None):
        kind = (
            "rope_freqs.weight"
            if file.tensor("rope_freqs.weight") is not None
            else f"rope.scaling.type {shown(scaling, 20)!r}"
        )
        message = f"{file.path.name} scales its rotary positions for long contexts ({kind}); this app runs the plain rotary positions only."
        raise gguf_error("scaled_rotary", message, file=file.path.name, kind=kind)


def hf_name(gguf_name: str, architecture: str = "") -> str | None:
    """``blk.3.attn_q.weight`` -> ``model.layers.3.self_attn.q_proj.weight`` (None for a name we do not map);
    a ``gemma3`` file's norms by Gemma's names (its ``ffn_norm`` is the norm before the feed-forward)."""
    stem, _, suffix = gguf_name.rpartition(".")
    parts = stem.split(".")
    names = LAYER_NAMES
    if architecture == "gemma3":
        from .gemma3_gguf import LAYER_NAMES as GEMMA3_NAMES

        names = {**LAYER_NAMES, **GEMMA3_NAMES}
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in names:
        return f"model.layers.{int(parts[1])}.{names[parts[2]]}.{suffix}"
    if len(parts) == 1 and stem in GGUF_NAMES:
        return f"{GGUF_NAMES[stem]}.{suffix}"
    return None


def unpermute_rows(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """Undo llama.cpp's row order for a rotary projection: its converter writes each head's rows as
    (pairs, 2) interleaved; Hugging Face's order is (2, pairs): the first halves, then the second
    (transformers' ``_reverse_permute_weights``). Works on weights (out, in) and biases (out,)."""
    rows = weight.shape[0]
    if rows % (2 * heads):
        raise CheckpointError(f"A query/key projection of {rows} rows cannot be split into {heads} rotary heads.")
    return weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:]).transpose(1, 2).reshape(weight.shape)


def _renamed(file: GGUFFile, hf: dict, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The tensors under Hugging Face's names, the query/key rows in Hugging Face's order for ``llama`` files
    (query by the attention heads, key by the key/value heads, as transformers' loader undoes them)."""
    out = {}
    permuted = file.architecture == "llama"
    for name, tensor in tensors.items():
        target = hf_name(name, file.architecture)
        if target is None:
            target = shown(name)  # left as it is (escaped, cut): the family row lists what it did not use
        elif permuted and ".self_attn.q_proj." in target:
            tensor = unpermute_rows(tensor, hf["num_attention_heads"])
        elif permuted and ".self_attn.k_proj." in target:
            tensor = unpermute_rows(tensor, hf["num_key_value_heads"])
        out[target] = tensor
    return out


def meta_weights(file: GGUFFile, hf: dict) -> dict[str, torch.Tensor]:
    """Every tensor as a meta tensor of its shape (nothing read), under Hugging Face's names (a token table
    kept in 8-bit blocks as its two tensors, ``hf["packed_embedding"]``)."""
    tensors = {t.name: torch.empty(t.shape, device="meta") for t in file.tensors if not _packed(hf, t.name)}
    if hf.get("packed_embedding"):
        from .gemma3_gguf import TABLE, packed_meta

        tensors.update(packed_meta(file.tensor(TABLE)))
    return _renamed(file, hf, tensors)


def _packed(hf: dict, name: str) -> bool:
    return bool(hf.get("packed_embedding")) and name == "token_embd.weight"


def hf_weights(file: GGUFFile, hf: dict) -> dict[str, torch.Tensor]:
    """Every tensor dequantised to float32 under Hugging Face's names (a Q8_0 token table that the family
    keeps packed: its int8 values and float32 scales); the total is checked against the app's cap
    (200M parameters in float32) before anything is read."""
    total = sum(t.elements // (4 if _packed(hf, t.name) else 1) for t in file.tensors) * 4
    if total > MAX_FLOAT_BYTES:
        gb = f"{total / 1e9:,.1f}"
        message = f"{file.path.name} holds {gb} GB of weights once dequantised to float32; this app opens models up to 200M parameters (0.8 GB)."
        raise gguf_error("too_many_parameters", message, file=file.path.name, gb=gb)
    arrays = read_tensors(file, {t.name for t in file.tensors if not _packed(hf, t.name)})
    tensors = {name: torch.from_numpy(array) for name, array in arrays.items()}
    if hf.get("packed_embedding"):
        from .gemma3_gguf import TABLE, packed_table

        tensors.update(packed_table(file, file.tensor(TABLE)))
    return _renamed(file, hf, tensors)
