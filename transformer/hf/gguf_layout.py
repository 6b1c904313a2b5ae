"""The layout rules of a GGUF file's data section, as llama.cpp enforces them (``gguf_init_from_file``):

- ``general.alignment`` (default 32) is a power of two, and, as the GGUF specification asks, a multiple
  of 8 (so 8, 16, 32, ... up to 1 MiB); llama.cpp itself refuses any alignment that is not a power of two;
- every tensor's offset (from the start of the data section) is a multiple of the alignment;
- the tensors lie in the order the header lists them, each right after the one before, its bytes padded
  to the alignment: tensor *i* starts where tensor *i-1*'s padded bytes end (llama.cpp: "tensor 'x' has
  offset N, expected M"). So no two tensors share bytes, and a tensor whose declared size runs into the
  next one (an embedding claiming twice its rows) is refused by naming both;
- the last tensor ends inside the file (checked by the reader with the other per-tensor checks).

Each refusal is one sentence naming the file, the tensor (escaped and cut) and the rule.
"""

from __future__ import annotations

from ..checkpoints.errors import CodedError, shown

DEFAULT_ALIGNMENT = 32
MAX_ALIGNMENT = 1 << 20
WRITTEN_WRONGLY = "the file was written wrongly or is damaged: download it again, or convert it again with llama.cpp"


def checked_alignment(value: object, file: str) -> int:
    """``general.alignment``: a power of two, a multiple of 8, at most 1 MiB; CodedError otherwise."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 8 <= value <= MAX_ALIGNMENT
    if not ok or value & (value - 1):
        rule = "a power of two and a multiple of 8 (8, 16, 32, ... up to 1,048,576)"
        message = f"{file}: general.alignment is {shown(value)}; GGUF needs {rule}: {WRITTEN_WRONGLY}."
        raise CodedError("gguf_alignment", message, file=file, value=shown(value))
    return value


def check_layout(tensors, data_start: int, alignment: int, file: str) -> None:
    """``tensors`` (TensorInfo, in the header's order: ``start`` from the file's start, ``nbytes``) laid out
    as llama.cpp requires (see the module docstring); CodedError naming the first tensor that is not."""
    expected, previous = 0, None
    for info in tensors:
        offset, name = info.start - data_start, shown(info.name)
        values = {"file": file, "tensor": name, "offset": f"{offset:,}", "alignment": alignment}
        if offset % alignment:
            message = (
                f"{file}: tensor {name} starts at byte {offset:,} of the data, not a multiple of the file's "
                f"alignment ({alignment} bytes), where GGUF places every tensor: {WRITTEN_WRONGLY}."
            )
            raise CodedError("gguf_misaligned", message, **values)
        if offset < expected:
            other = shown(previous.name)
            message = (
                f"{file}: tensor {name} starts at byte {offset:,} of the data, inside the bytes of tensor {other} "
                f"(which end at byte {previous.start - data_start + previous.nbytes:,}): two tensors cannot share "
                f"bytes: {WRITTEN_WRONGLY}."
            )
            raise CodedError("gguf_overlap", message, other=other, **values)
        if offset > expected:
            after = f"after tensor {shown(previous.name)}" if previous is not None else "at the start of the data"
            message = (
                f"{file}: tensor {name} starts at byte {offset:,} of the data, leaving {offset - expected:,} unused "
                f"bytes {after}; GGUF (and llama.cpp) lays each tensor right after the one before it, padded to "
                f"{alignment} bytes: {WRITTEN_WRONGLY}."
            )
            raise CodedError("gguf_gap", message, expected=f"{expected:,}", **values)
        expected = offset + -(-info.nbytes // alignment) * alignment
        previous = info
