"""Read a GGUF file (llama.cpp, Ollama, LM Studio) without trusting it: its metadata, its tensors'
names, shapes and types, and each tensor dequantised to float32 with the maintained ``gguf`` package.

The header is parsed here, not with ``gguf.GGUFReader``: every count and length the file claims is
checked against the bytes that are left before anything is read or allocated (a 2 GB string, a
billion tensors or a tensor past the end are refused by their numbers), and the vocabulary's
98,000 strings are read in one pass (GGUFReader builds a numpy view per string: 4.3 s for
SmolLM2-135M's header on this machine, against ~0.1 s here). The tensor data is memory-mapped and
dequantised with ``gguf.quants.dequantize`` (what transformers' GGUF loader uses), one tensor at a time.

Layout (GGUF v2/v3, little-endian): magic ``GGUF``, version (u32), tensor count (u64), metadata
count (u64); the metadata (key string, value type u32, value); the tensor infos (name, dimension
count u32, dimensions u64 innermost first, type u32, offset u64 from the data start); padding to
``general.alignment`` (32); the data, each tensor on the alignment right after the one before
(:mod:`.gguf_layout` checks it as llama.cpp does). Every name, key and value from the file that a message
shows is escaped and cut (:func:`~transformer.checkpoints.errors.shown`).
"""

from __future__ import annotations

import mmap
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType
from gguf.quants import dequantize

from ..checkpoints.errors import CodedError, shown
from .gguf_layout import DEFAULT_ALIGNMENT, check_layout, checked_alignment

MAGIC = b"GGUF"
MAX_TENSORS = 20_000  # a 64-layer model has ~600
MAX_METADATA = 10_000  # SmolLM2 has 33 keys
MAX_STRING_BYTES = 16 * 1024**2  # a chat template is a few kB; a token a few bytes
MAX_ARRAY = 4_000_000  # a vocabulary of 1M tokens, its merges and scores
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_NAME_BYTES = 64  # GGML_MAX_NAME: a tensor name is shorter (llama.cpp refuses longer ones)
MAX_ELEMENTS = 2**31  # one tensor; the app's models stay far below (200M parameters in all)
CHUNK_VALUES = 1 << 16  # values dequantised at once (256 kB of float32: fastest here, in cache)
DAMAGED = "the file is damaged or cut off: download it again"

# value type -> (struct format, bytes); strings and arrays are read by their own code
SCALARS = {
    GGUFValueType.UINT8: ("<B", 1),
    GGUFValueType.INT8: ("<b", 1),
    GGUFValueType.UINT16: ("<H", 2),
    GGUFValueType.INT16: ("<h", 2),
    GGUFValueType.UINT32: ("<I", 4),
    GGUFValueType.INT32: ("<i", 4),
    GGUFValueType.FLOAT32: ("<f", 4),
    GGUFValueType.BOOL: ("<?", 1),
    GGUFValueType.UINT64: ("<Q", 8),
    GGUFValueType.INT64: ("<q", 8),
    GGUFValueType.FLOAT64: ("<d", 8),
}
NUMPY = {
    GGUFValueType.UINT8: "<u1",
    GGUFValueType.INT8: "<i1",
    GGUFValueType.UINT16: "<u2",
    GGUFValueType.INT16: "<i2",
    GGUFValueType.UINT32: "<u4",
    GGUFValueType.INT32: "<i4",
    GGUFValueType.FLOAT32: "<f4",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "<u8",
    GGUFValueType.INT64: "<i8",
    GGUFValueType.FLOAT64: "<f8",
}


def gguf_error(code: str, message: str, **values) -> CodedError:
    """A refusal the app translates (its code prefixed ``gguf_``), in English for the CLI."""
    return CodedError(f"gguf_{code}", message, **values)


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as the file describes it: ``shape`` in PyTorch order (rows first: ggml's dimensions
    reversed), its GGML type, where its bytes start (from the file's start) and how many there are."""

    name: str
    shape: tuple[int, ...]
    type: GGMLQuantizationType
    start: int
    nbytes: int

    @property
    def elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class GGUFFile:
    """A GGUF file's header, checked: metadata (key -> value; arrays as lists), tensors in file order."""

    path: Path
    version: int
    metadata: dict[str, object]
    tensors: tuple[TensorInfo, ...]

    @property
    def architecture(self) -> str:
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else ""

    def tensor(self, name: str) -> TensorInfo | None:
        return next((t for t in self.tensors if t.name == name), None)

    def type_counts(self) -> dict[str, int]:
        """{"Q4_1": 210, "F32": 61, "Q8_0": 1}: tensors per GGML type, most first."""
        return dict(Counter(t.type.name for t in self.tensors).most_common())

    def type_summary(self) -> str:
        """'210 Q4_1 (attention and feed-forward weights), 61 F32 (norms), 1 Q8_0 (token_embd.weight)'-style
        text: the count per type and which tensors hold it."""
        parts = []
        for kind, count in self.type_counts().items():
            names = [t.name for t in self.tensors if t.type.name == kind]
            parts.append(f"{count} {kind} ({_which(names)})")
        return ", ".join(parts)


def _which(names: list[str]) -> str:
    """Tensor names grouped by their role (``blk.N.attn_q.weight`` -> ``attn_q``) for one short line."""
    roles = dict.fromkeys(shown(n.split(".")[2] if n.startswith("blk.") and n.count(".") >= 3 else n) for n in names)
    listed = list(roles)
    return ", ".join(listed[:8]) + (f", +{len(listed) - 8} more" if len(listed) > 8 else "")


class _Cursor:
    """Reads little-endian values from a buffer, each checked against the bytes that are left."""

    def __init__(self, buffer, name: str) -> None:
        self.buffer = buffer
        self.size = len(buffer)
        self.pos = 0
        self.name = name

    def need(self, count: int, what: str) -> None:
        if count < 0 or count > self.size - self.pos:
            left = self.size - self.pos
            raise gguf_error(
                "truncated",
                f"{self.name} claims {what} of {count:,} bytes at byte {self.pos:,}, but only {left:,} bytes "
                f"are left: {DAMAGED}.",
                file=self.name,
                what=what,
                claimed=f"{count:,}",
                left=f"{left:,}",
            )

    def scalar(self, fmt: str, nbytes: int, what: str):
        self.need(nbytes, what)
        (value,) = struct.unpack_from(fmt, self.buffer, self.pos)
        self.pos += nbytes
        return value

    def u32(self, what: str) -> int:
        return self.scalar("<I", 4, what)

    def u64(self, what: str) -> int:
        return self.scalar("<Q", 8, what)

    def string(self, what: str) -> str:
        length = self.u64(what)
        if length > MAX_STRING_BYTES:
            raise gguf_error(
                "too_long",
                f"{self.name} claims a {what} of {length:,} bytes (limit {MAX_STRING_BYTES:,}): {DAMAGED}.",
                file=self.name,
                what=what,
                claimed=f"{length:,}",
                limit=f"{MAX_STRING_BYTES:,}",
            )
        self.need(length, what)
        raw = bytes(self.buffer[self.pos : self.pos + length])
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def count(self, what: str, limit: int, smallest: int) -> int:
        """A u64 count of items of at least ``smallest`` bytes each, within ``limit`` and the bytes left."""
        value = self.u64(what)
        if value > limit or value * smallest > self.size - self.pos:
            raise gguf_error(
                "absurd_count",
                f"{self.name} claims {value:,} {what}; the limit is {limit:,} and the file has room for "
                f"{(self.size - self.pos) // max(smallest, 1):,}: {DAMAGED}.",
                file=self.name,
                what=what,
                claimed=f"{value:,}",
            )
        return value


def read_gguf(path: str | Path) -> GGUFFile:
    """The checked header of the GGUF file at ``path`` (no tensor is read); CodedError saying what is wrong."""
    path = Path(path)
    with open(path, "rb") as handle:
        if path.stat().st_size == 0:
            raise gguf_error("empty", f"{path.name} is empty (0 bytes): {DAMAGED}.", file=path.name)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
            return _parse(buffer, path)


def _parse(buffer, path: Path) -> GGUFFile:
    cursor = _Cursor(buffer, path.name)
    cursor.need(4, "the GGUF magic")
    if bytes(buffer[:4]) != MAGIC:
        raise gguf_error("not_gguf", f"{path.name} does not start with 'GGUF': it is not a GGUF file.", file=path.name)
    cursor.pos = 4
    version = cursor.u32("the version")
    if version not in (2, 3):
        message = (
            f"{path.name} is GGUF version {version}; this app reads versions 2 and 3 (little-endian): "
            "convert it again with a current llama.cpp."
        )
        raise gguf_error("version", message, file=path.name, version=version)
    n_tensors = cursor.count("tensors", MAX_TENSORS, 8 + 4 + 4 + 8)
    n_metadata = cursor.count("metadata entries", MAX_METADATA, 8 + 4 + 1)
    metadata: dict[str, object] = {}
    for _ in range(n_metadata):
        key = cursor.string("metadata key")
        label = shown(key)
        metadata[key] = _value(cursor, cursor.u32(f"the type of {label}"), label)
    infos = [_tensor_info(cursor) for _ in range(n_tensors)]
    seen: set[str] = set()
    for name, *_ in infos:
        if name in seen:
            message = f"{path.name} lists tensor {shown(name)} twice: {DAMAGED}."
            raise gguf_error("twice", message, file=path.name, tensor=shown(name))
        seen.add(name)
    alignment = checked_alignment(metadata.get("general.alignment", DEFAULT_ALIGNMENT), path.name)
    data_start = -(-cursor.pos // alignment) * alignment
    tensors = tuple(_placed(info, data_start, cursor) for info in infos)
    check_layout(tensors, data_start, alignment, path.name)
    return GGUFFile(path, version, metadata, tensors)


def _value(cursor: _Cursor, kind: int, key: str):
    """One metadata value of type ``kind``; arrays of numbers as lists read in one go (``key``: the key
    as it may be shown, escaped and cut)."""
    try:
        kind = GGUFValueType(kind)
    except ValueError:
        raise gguf_error(
            "bad_value",
            f"{cursor.name}: {key} has value type {kind}, which GGUF does not define: {DAMAGED}.",
            file=cursor.name,
        ) from None
    if kind == GGUFValueType.STRING:
        return cursor.string(f"string ({key})")
    if kind in SCALARS:
        fmt, nbytes = SCALARS[kind]
        return cursor.scalar(fmt, nbytes, key)
    if kind != GGUFValueType.ARRAY:
        raise gguf_error("bad_value", f"{cursor.name}: {key} has value type {kind.name}: {DAMAGED}.", file=cursor.name)
    number = cursor.u32(f"the element type of {key}")
    inner = GGUFValueType(number) if number in GGUFValueType._value2member_map_ else None
    if inner == GGUFValueType.STRING:
        count = cursor.count(f"strings in {key}", MAX_ARRAY, 8)
        return [cursor.string(f"string in {key}") for _ in range(count)]
    if inner not in SCALARS:
        what = inner.name if inner is not None else f"type {number}"
        message = f"{cursor.name}: {key} is an array of {what}, which this app does not read: {DAMAGED}."
        raise gguf_error("bad_value", message, file=cursor.name)
    size = SCALARS[inner][1]
    count = cursor.count(f"values in {key}", MAX_ARRAY, size)
    values = np.frombuffer(cursor.buffer, dtype=NUMPY[inner], count=count, offset=cursor.pos).tolist()
    cursor.pos += count * size
    return values


def _tensor_info(cursor: _Cursor) -> tuple[str, tuple[int, ...], int, int]:
    name = cursor.string("tensor name")
    label = shown(name)
    size = len(name.encode("utf-8"))
    if size >= MAX_NAME_BYTES:
        message = (
            f"{cursor.name}: tensor {label} has a name of {size:,} bytes; GGUF names (llama.cpp's GGML_MAX_NAME) "
            f"are under {MAX_NAME_BYTES} bytes: {DAMAGED}."
        )
        raise gguf_error("name_too_long", message, file=cursor.name, tensor=label, size=f"{size:,}")
    dims = cursor.u32(f"the dimension count of {label}")
    if not 1 <= dims <= MAX_DIMS:
        raise gguf_error(
            "bad_shape",
            f"{cursor.name}: tensor {label} claims {dims} dimensions (GGUF has 1 to {MAX_DIMS}): {DAMAGED}.",
            file=cursor.name,
            tensor=label,
            shape=f"{dims} dimensions",
        )
    ne = [cursor.u64(f"a dimension of {label}") for _ in range(dims)]
    kind = cursor.u32(f"the type of {label}")
    offset = cursor.u64(f"the offset of {label}")
    return name, tuple(reversed(ne)), kind, offset


def _placed(info: tuple, data_start: int, cursor: _Cursor) -> TensorInfo:
    """A tensor info whose shape, type and place are checked: known type, blocks that fit its rows,
    within the element cap, and its bytes inside the file."""
    name, shape, kind, offset = info
    label = shown(name)
    elements = 1
    for n in shape:
        elements *= n
    if min(shape) < 1 or elements > MAX_ELEMENTS:
        raise gguf_error(
            "bad_shape",
            f"{cursor.name}: tensor {label} claims shape {shape} ({elements:,} values; the limit is {MAX_ELEMENTS:,}): {DAMAGED}.",
            file=cursor.name,
            tensor=label,
            shape=str(shape),
        )
    qtype = ggml_type(kind, label, cursor.name)
    block, block_bytes = GGML_QUANT_SIZES[qtype]
    if shape[-1] % block:
        raise gguf_error(
            "bad_shape",
            f"{cursor.name}: tensor {label} has rows of {shape[-1]} values, not a multiple of {qtype.name}'s blocks of {block}: {DAMAGED}.",
            file=cursor.name,
            tensor=label,
            shape=str(shape),
        )
    nbytes = elements // block * block_bytes
    start = data_start + offset
    if start + nbytes > cursor.size:
        raise gguf_error(
            "past_end",
            f"{cursor.name}: tensor {label} ({nbytes:,} bytes at byte {start:,}) ends past the end of the file "
            f"({cursor.size:,} bytes): {DAMAGED}.",
            file=cursor.name,
            tensor=label,
        )
    return TensorInfo(name, shape, qtype, start, nbytes)


def ggml_type(kind: int, tensor: str, file: str) -> GGMLQuantizationType:
    """The GGML type numbered ``kind``; CodedError naming it when gguf does not know it or cannot
    dequantise it (the check is made for every tensor before anything is read)."""
    try:
        qtype = GGMLQuantizationType(kind)
    except ValueError:
        message = f"{file}: tensor {tensor} has type number {kind}, which is no GGML type this app knows: {DAMAGED}, or convert it with llama.cpp to a common type (Q8_0, Q4_K_M)."
        raise gguf_error("unknown_type", message, file=file, tensor=tensor, type=str(kind)) from None
    if not can_dequantize(qtype):
        message = f"{file}: tensor {tensor} is stored as {qtype.name}, which this app cannot dequantise; convert the model to a common type (F16, Q8_0, Q4_K_M) with llama.cpp."
        raise gguf_error("unsupported_type", message, file=file, tensor=tensor, type=qtype.name)
    return qtype


def can_dequantize(qtype: GGMLQuantizationType) -> bool:
    """Whether ``gguf.quants.dequantize`` turns ``qtype`` into float32 values (F32, F16 and every
    quantised type the package implements: BF16, Q4_0 … Q8_0, the K-quants, the IQ types)."""
    from gguf.quants import _type_traits  # the package's table of implemented types

    return qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16) or qtype in _type_traits


def read_tensors(file: GGUFFile, names: set[str] | None = None) -> dict[str, np.ndarray]:
    """The tensors (those in ``names``, else all) dequantised to float32 arrays of their shape, each its
    own memory (nothing points into the file once this returns)."""
    end = max((t.start + t.nbytes for t in file.tensors), default=0)
    if file.path.stat().st_size < end:
        raise gguf_error("changed", f"{file.path.name} changed while it was read: {DAMAGED}.", file=file.path.name)
    data = np.memmap(file.path, dtype=np.uint8, mode="r")  # closed when the last view is gone
    return {t.name: _dequantized(data, t) for t in file.tensors if names is None or t.name in names}


def _dequantized(data: np.ndarray, info: TensorInfo) -> np.ndarray:
    block, block_bytes = GGML_QUANT_SIZES[info.type]
    rows = data[info.start : info.start + info.nbytes].reshape(-1, info.shape[-1] // block * block_bytes)
    if info.type in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        values = dequantize(rows, info.type)
        return np.array(values, dtype=np.float32).reshape(info.shape)  # F32: a view of the file, copied
    return _in_chunks(rows, info).reshape(info.shape)


def _in_chunks(rows: np.ndarray, info: TensorInfo) -> np.ndarray:
    """gguf's own dequantisation (``dequantize_rows`` of the type) over chunks of about CHUNK_VALUES values:
    ``gguf.quants.dequantize`` calls it on groups of 16 rows, ~2.5x slower over SmolLM2's 272 tensors;
    chunks keep the scratch arrays to a few MB whatever the tensor's size."""
    from gguf.quants import _type_traits

    kind = _type_traits[info.type]
    kind.init_grid()
    width = info.shape[-1]
    out = np.empty((rows.shape[0], width), dtype=np.float32)
    step = max(1, CHUNK_VALUES // width)
    for start in range(0, rows.shape[0], step):
        part = rows[start : start + step]
        out[start : start + len(part)] = kind.dequantize_rows(part).reshape(len(part), width)
    return out
