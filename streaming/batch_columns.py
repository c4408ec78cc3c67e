"""Batches as columns: what `StreamingDataset.batches` yields, without torch.

A batch is a dict of columns. A column whose values are numpy arrays of one shape and dtype,
numpy scalars of one dtype, Python ints or Python floats becomes one numpy array (the values
stacked: exactly the tensor `torch.utils.data.default_collate` would make, as numpy); any other
column (strings, bytes, dicts, ragged arrays) stays a list of the values.

`BatchParts` puts a batch together from the pieces read shard by shard: shards that hand back
whole columns (`MDSReader.read_columns`, gathered straight from the shard's bytes) are scattered
into place without per-sample Python work; anything else goes through `columns_of`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from streaming.defaults import TENSOR_DTYPE_KINDS
from streaming.errors import StreamingError

__all__ = ["BatchParts", "MixedColumnsError", "column_of", "columns_of"]

_INTS, _FLOATS, _BOOLS = (int, np.int64), (float, np.float64), (bool, np.bool_)
_PYTHON_TWINS: dict[type, tuple[type, type]] = {
    int: _INTS, np.int64: _INTS, float: _FLOATS, np.float64: _FLOATS, bool: _BOOLS,
    np.bool_: _BOOLS}


class MixedColumnsError(StreamingError, ValueError, KeyError):
    """Samples of one batch with different columns (streams of different schemas). A
    `KeyError` naming the first column a sample lacks, as `default_collate` raises in the
    reference, and a `ValueError` (a bad batch); its text says more. (Built from its text
    alone too: that is how torch raises it again out of a DataLoader worker.)"""

    def __init__(self, column: str, message: str | None = None) -> None:
        super().__init__(column)
        self.message = column if message is None else message

    def __str__(self) -> str:
        return self.message


def columns_of(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The batch of these sample dicts, column by column (see the module docstring).

    The first sample's columns make the batch, as in `default_collate`: later samples may
    hold more (streams of other schemas), which are left out.

    Raises:
        MixedColumnsError: a sample lacks one of the first sample's columns.
        ValueError: a sample is not a dict.
    """
    if not samples:
        return {}
    keys = samples[0].keys()
    for sample in samples:
        if not isinstance(sample, Mapping) or (sample.keys() != keys and
                                               not keys <= sample.keys()):
            other = sorted(sample) if isinstance(sample, Mapping) else f"{sample!r:.80}"
            message = (f"Samples of one batch must hold the first one's columns; got "
                       f"{sorted(keys)} and {other} (iterate the dataset with a collate "
                       "function of your own for other samples).")
            if not isinstance(sample, Mapping):
                raise ValueError(message)
            raise MixedColumnsError([k for k in keys if k not in sample][0], message)
    return {key: column_of([sample[key] for sample in samples]) for key in keys}


def column_of(values: list[Any]) -> Any:
    """One column: an array where `default_collate` makes a tensor of it, else the list."""
    first = values[0]
    kind = type(first)
    if kind is np.ndarray:
        dtype, shape = first.dtype, first.shape
        if dtype.kind in TENSOR_DTYPE_KINDS and dtype.isnative and all(
                type(v) is np.ndarray and v.shape == shape and v.dtype == dtype for v in values):
            return np.stack(values)
    elif kind in _PYTHON_TWINS:
        # Python ints and floats; numpy's int64 and float64 alongside them (a batch put
        # together from gathered columns and decoded samples) make the same column.
        allowed = _PYTHON_TWINS[kind]
        if all(type(v) in allowed for v in values):
            try:
                return np.array(values, allowed[1])
            except OverflowError:  # past int64: torch refuses such ints too
                return values
    elif isinstance(first, np.generic):
        dtype = first.dtype
        if dtype.kind in TENSOR_DTYPE_KINDS and dtype.isnative and all(
                type(v) is kind for v in values):
            return np.array(values, dtype)
    return values


class BatchParts:
    """The pieces of one batch, each read from one shard, put back in batch order.

    Args:
        size: samples in the batch.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._parts: list[tuple[np.ndarray, dict[str, Any] | list[Any]]] = []

    def add_columns(self, positions: np.ndarray, columns: dict[str, Any]) -> None:
        """Samples at `positions` of the batch, as columns (arrays or lists, one per key)."""
        self._parts.append((positions, columns))

    def add_samples(self, positions: np.ndarray, samples: list[Any]) -> None:
        """Samples at `positions` of the batch, one value each."""
        self._parts.append((positions, samples))

    def build(self) -> dict[str, Any]:
        parts = self._parts
        if all(isinstance(part, dict) for _, part in parts) and parts:
            merged = self._merge_columns([(pos, part) for pos, part in parts
                                          if isinstance(part, dict)])
            if merged is not None:
                return merged
        samples: list[Any] = [None] * self.size
        for positions, part in parts:
            values = _rows(part, len(positions)) if isinstance(part, dict) else part
            for position, value in zip(positions.tolist(), values):
                samples[position] = value
        return columns_of(samples)

    def _merge_columns(self, parts: list[tuple[np.ndarray, dict[str, Any]]]
                       ) -> dict[str, Any] | None:
        """Columns scattered into batch order, or None when the parts disagree on a column."""
        (first_positions, first), size = parts[0], self.size
        if len(parts) == 1 and len(first_positions) == size and (
                first_positions == np.arange(size)).all():
            # One shard, in order: the gathered columns are the batch.
            return {key: value if isinstance(value, np.ndarray) else column_of(value)
                    for key, value in first.items()}
        keys = first.keys()
        if any(part.keys() != keys for _, part in parts):
            return None
        out: dict[str, Any] = {}
        for key in keys:
            head = first[key]
            if isinstance(head, np.ndarray):
                if not all(isinstance(p[key], np.ndarray) and p[key].dtype == head.dtype
                           and p[key].shape[1:] == head.shape[1:] for _, p in parts):
                    return None
                column = np.empty((size, *head.shape[1:]), head.dtype)
                for positions, part in parts:
                    column[positions] = part[key]
                out[key] = column
            else:
                if not all(isinstance(p[key], list) for _, p in parts):
                    return None
                values: list[Any] = [None] * size
                for positions, part in parts:
                    for position, value in zip(positions.tolist(), part[key]):
                        values[position] = value
                out[key] = column_of(values)
        return out


def _rows(columns: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """Columns back into per-sample dicts (numpy scalars and array rows for array columns)."""
    keys = list(columns)
    values = [list(columns[key]) for key in keys]
    return [dict(zip(keys, row)) for row in zip(*values)] if keys else [{} for _ in range(count)]
