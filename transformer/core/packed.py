"""A token table kept in 8-bit blocks, and the output layer tied to it.

A large vocabulary's table in float32 is most of a small model's memory (262,144 rows × 640 is 671 MB).
``BlockInt8Table`` keeps it as int8 values with one float32 scale per block of ``BLOCK`` values along a row:
row v's value j is ``scales[v, j // BLOCK] * values[v, j]``, computed in float32 — exactly the numbers of a
table quantised that way (a GGUF Q8_0 tensor: an fp16 scale and 32 int8 values per block), in a quarter of
the memory. A lookup dequantises only the rows it reads; :class:`TiedBlockOutput` computes the logits
``x @ table.T`` a bounded group of rows at a time (``ROWS_AT_ONCE``), so no float32 copy of the whole table
is ever made (and reading int8 is faster than reading float32: the product is bound by memory).

Shapes: V rows (the vocabulary), D values per row (the model size), D / BLOCK scales per row.
"""

from __future__ import annotations

import torch
from torch import nn

BLOCK = 32  # values per scale (Q8_0's block)
ROWS_AT_ONCE = 1024  # rows dequantised per step of the output product: 2.6 MB of float32 at D = 640, in cache


class BlockInt8Table(nn.Module):
    """A (V, D) table of int8 ``values`` (V, D) and float32 ``scales`` (V, D / BLOCK), both buffers
    (saved and moved with the model, not trained). ``forward(ids)`` (...) -> rows (..., D) in float32."""

    def __init__(self, rows: int, width: int) -> None:
        super().__init__()
        if width % BLOCK:
            raise ValueError(f"A table in blocks of {BLOCK} needs rows of a multiple of {BLOCK} values, not {width}.")
        self.register_buffer("values", torch.zeros(rows, width, dtype=torch.int8))
        self.register_buffer("scales", torch.zeros(rows, width // BLOCK, dtype=torch.float32))

    @property
    def shape(self) -> torch.Size:
        return self.values.shape

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (...) -> their rows (..., D), float32."""
        return _dequantised(self.values[ids], self.scales[ids])

    def rows(self, start: int, stop: int) -> torch.Tensor:
        """Rows start .. stop - 1 as float32 (stop - start, D)."""
        return _dequantised(self.values[start:stop], self.scales[start:stop])

    @property
    def weight(self) -> PackedRows:
        """The table as rows to index (``weight[token]``, ``weight[a:b]``), dequantised when read."""
        return PackedRows(self)


def _dequantised(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """values (..., D) int8, scales (..., D / BLOCK) -> (..., D) float32: each block times its scale."""
    blocks = values.reshape(*values.shape[:-1], -1, BLOCK).float()
    return (blocks * scales[..., None]).reshape(values.shape)


class PackedRows:
    """Indexing view of a :class:`BlockInt8Table`: ``view[i]`` is ``table(i)`` for an int, a slice (step 1)
    or a tensor of ids; ``shape``, ``dtype`` and ``device`` as a (V, D) tensor would report them. ``double()``
    and ``to(dtype)`` give the same view with its rows in another dtype (nothing is read until indexed)."""

    def __init__(self, table: BlockInt8Table, dtype: torch.dtype = torch.float32) -> None:
        self.table = table
        self.dtype = dtype

    @property
    def shape(self) -> torch.Size:
        return self.table.shape

    def to(self, dtype: torch.dtype) -> PackedRows:
        return PackedRows(self.table, dtype)

    def double(self) -> PackedRows:
        return self.to(torch.float64)

    def detach(self) -> PackedRows:
        return self

    @property
    def device(self) -> torch.device:
        return self.table.values.device

    def __len__(self) -> int:
        return self.table.shape[0]

    def __getitem__(self, index) -> torch.Tensor:
        return self._rows(index).to(self.dtype)

    def _rows(self, index) -> torch.Tensor:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise IndexError("Rows of a packed table are read in steps of one.")
            return self.table.rows(start, stop)
        if isinstance(index, int):
            return self.table.rows(index, index + 1)[0] if index >= 0 else self._rows(len(self) + index)
        return self.table(torch.as_tensor(index, device=self.device))


class TiedBlockOutput(nn.Module):
    """The output layer tied to a :class:`BlockInt8Table`: x (..., D) -> logits (..., V) = x @ tableᵀ,
    ``ROWS_AT_ONCE`` rows of the table dequantised at a time. No bias. The table is not registered as a
    submodule here (it is the embedding's): the state holds it once."""

    bias = None

    def __init__(self, table: BlockInt8Table) -> None:
        super().__init__()
        self._table = (table,)  # a tuple: kept out of the module tree

    @property
    def table(self) -> BlockInt8Table:
        return self._table[0]

    @property
    def weight(self) -> PackedRows:
        return self.table.weight

    @property
    def out_features(self) -> int:
        return self.table.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., D) -> (..., V). The logits are written transposed, (V, N), so that each group of rows
        fills a contiguous block with no copy; the group's rows are dequantised into one reused buffer."""
        table = self.table
        flat = x.reshape(-1, x.shape[-1]).float()  # (N, D)
        vocab, width = table.shape
        out = flat.new_empty(vocab, flat.shape[0])  # (V, N)
        buffer = flat.new_empty(min(ROWS_AT_ONCE, vocab), width // BLOCK, BLOCK)
        blocks = table.values.view(vocab, width // BLOCK, BLOCK)
        scales = table.scales[..., None]  # (V, D / BLOCK, 1)
        for start in range(0, vocab, ROWS_AT_ONCE):
            stop = min(start + ROWS_AT_ONCE, vocab)
            rows = buffer[: stop - start]
            # converted, then scaled: the numbers of one mixed-type mul, 11 % faster on this machine
            rows.copy_(blocks[start:stop]).mul_(scales[start:stop])
            torch.mm(rows.view(stop - start, width), flat.T, out=out[start:stop])
        logits = out.T if flat.shape[0] == 1 else out.T.contiguous()
        return logits.reshape(*x.shape[:-1], vocab).to(x.dtype)
