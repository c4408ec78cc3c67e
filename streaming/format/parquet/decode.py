"""Arrow columns of one row group -> the values samples hold, with the least per-row work.

A sample is a dict of plain values: numbers and booleans as Python values, numeric lists and
fixed-size lists as numpy arrays (views into one writable buffer per row group), strings as
`str`, binary as `bytes`, structs as dicts, timestamps (UTC), dates and durations as numpy
`datetime64` / `timedelta64` scalars, decimals as `decimal.Decimal`, nulls as None. Each column
is converted once per row group (C-level: numpy `tolist`, Arrow `to_pylist`), then rows are
cheap lookups. Columns whose
values are fixed-size numbers without nulls also keep one numpy array, so the batched path
gathers them with one `take` (the same dtype `default_collate` gives the Python values).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Column", "decode_column"]


class Column:
    """One column of one row group, ready for row lookups.

    Attributes:
        rows: every row's value (a list), or None when rows are made on demand (`row`).
        array: the values as one numpy array (fixed-size numbers without nulls), else None.
    """

    rows: list[Any] | None = None
    array: np.ndarray | None = None

    def row(self, i: int) -> Any:
        assert self.rows is not None
        return self.rows[i]

    def take(self, rows: Sequence[int]) -> list[Any]:
        """The values of `rows` as a list."""
        if self.rows is not None:
            values = self.rows
            return [values[i] for i in rows]
        return [self.row(i) for i in rows]

    def span(self, start: int, stop: int) -> list[Any]:
        """The values of rows ``start..stop-1`` as a list."""
        if self.rows is not None:
            return self.rows[start:stop]
        return [self.row(i) for i in range(start, stop)]


class _Values(Column):
    def __init__(self, rows: list[Any], array: np.ndarray | None = None) -> None:
        self.rows, self.array = rows, array


class _Numbers(Column):
    """Numbers without nulls: one array; the Python values are made only if rows are asked
    for (the batched path gathers from `array` and never makes them)."""

    def __init__(self, values: np.ndarray, array: np.ndarray) -> None:
        self._values, self.array = values, array

    def _made(self) -> list[Any]:
        rows = self.rows
        if rows is None:
            rows = self.rows = self._values.tolist()
        return rows

    def row(self, i: int) -> Any:
        return self._made()[i]

    def take(self, rows: Sequence[int]) -> list[Any]:
        values = self._made()
        return [values[i] for i in rows]

    def span(self, start: int, stop: int) -> list[Any]:
        return self._made()[start:stop]


class _NumericLists(Column):
    """Numeric lists: one flat writable buffer, each row a view of its slice."""

    def __init__(self, flat: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None,
                 width: int | None) -> None:
        self.flat, self.offsets, self.valid = flat, offsets, valid
        if width is not None and valid is None:  # fixed-size, no nulls: rows of one shape
            self.array = flat.reshape(-1, width) if width else np.empty((len(offsets) - 1, 0),
                                                                         flat.dtype)

    def row(self, i: int) -> Any:
        if self.valid is not None and not self.valid[i]:
            return None
        return self.flat[self.offsets[i]:self.offsets[i + 1]]

    def span(self, start: int, stop: int) -> list[Any]:
        if self.array is not None:
            return list(self.array[start:stop])
        return [self.row(i) for i in range(start, stop)]


class _Lists(Column):
    """Lists of non-numeric values (strings, structs, nested lists) as Python lists."""

    def __init__(self, child: Column, offsets: np.ndarray, valid: np.ndarray | None) -> None:
        self.child, self.offsets, self.valid = child, offsets.tolist(), valid

    def row(self, i: int) -> Any:
        if self.valid is not None and not self.valid[i]:
            return None
        return self.child.span(self.offsets[i], self.offsets[i + 1])


class _Structs(Column):
    def __init__(self, fields: dict[str, Column], valid: np.ndarray | None) -> None:
        self.fields, self.valid = fields, valid

    def row(self, i: int) -> Any:
        if self.valid is not None and not self.valid[i]:
            return None
        return {name: column.row(i) for name, column in self.fields.items()}


def _validity(array: Any) -> np.ndarray | None:
    if array.null_count == 0:
        return None
    return array.is_valid().to_numpy(zero_copy_only=False)


def decode_column(array: Any) -> Column:
    """The `Column` of an Arrow array (a `ChunkedArray` is combined first)."""
    import pyarrow as pa
    import pyarrow.types as t

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    kind = array.type
    if t.is_dictionary(kind):
        return decode_column(array.dictionary_decode())
    if t.is_integer(kind) or t.is_floating(kind) or t.is_boolean(kind):
        return _scalars(array)
    if t.is_timestamp(kind) or t.is_date(kind) or t.is_duration(kind):
        return _moments(array)
    if t.is_struct(kind):
        names = [kind.field(i).name for i in range(kind.num_fields)]
        children = array.flatten()  # adjusted for the struct's offset
        return _Structs({n: decode_column(c) for n, c in zip(names, children)}, _validity(array))
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
        return _lists(array)
    return _Values(array.to_pylist())  # strings, binary, decimals: Arrow makes them


def _scalars(array: Any) -> Column:
    import pyarrow.types as t

    valid = _validity(array)
    filled = array.fill_null(False if t.is_boolean(array.type) else 0) if valid is not None \
        else array
    values = filled.to_numpy(zero_copy_only=False)
    if valid is not None:
        rows = values.tolist()
        for i in np.flatnonzero(~valid).tolist():
            rows[i] = None
        return _Values(rows)
    kind = values.dtype.kind
    if kind == "u" and values.dtype.itemsize == 8 and len(values) \
            and int(values.max()) > np.iinfo(np.int64).max:
        # Exact Python ints (as `get_item` gives them), never wrapped into int64: batches of
        # them fail in collation as default_collate's do, rather than turn negative.
        return _Values(values.tolist())
    # What default_collate makes of the Python values: int64, float64 or bool tensors.
    collated = np.dtype(np.int64 if kind in "iu" else np.float64 if kind == "f" else np.bool_)
    return _Numbers(values, values.astype(collated, copy=False))


def _moments(array: Any) -> Column:
    """Timestamps (as UTC), dates and durations as numpy `datetime64` / `timedelta64` scalars
    of the column's own unit: exact at any unit, the same with or without pandas installed."""
    values = array.to_numpy(zero_copy_only=False)
    rows = list(values)
    valid = _validity(array)
    if valid is not None:
        for i in np.flatnonzero(~valid).tolist():
            rows[i] = None
    return _Values(rows)


def _nulls_only_in_null_rows(child: Any, offsets: np.ndarray, valid: np.ndarray | None
                             ) -> bool:
    """No null element in a row that is not null itself. A null row of a fixed-size list
    still has its slots (null), which must not turn the whole row group's rows into lists."""
    if child.null_count == 0:
        return True
    if valid is None:
        return False
    element_rows_valid = np.repeat(valid, np.diff(offsets))
    return not (element_rows_valid & ~_validity(child)).any()  # type: ignore[operator]


def _lists(array: Any) -> Column:
    import pyarrow.types as t

    kind = array.type
    valid = _validity(array)
    if t.is_fixed_size_list(kind):
        width = kind.list_size
        child = array.values.slice(array.offset * width, len(array) * width)
        offsets = np.arange(len(array) + 1, dtype=np.int64) * width
    else:
        width = None
        offsets = array.offsets.to_numpy().astype(np.int64)
        child = array.values
        if offsets[0]:
            child = child.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
            offsets = offsets - offsets[0]
        else:
            child = child.slice(0, int(offsets[-1]))
    value_type = child.type
    numeric = t.is_integer(value_type) or t.is_floating(value_type) or t.is_boolean(value_type)
    if numeric and _nulls_only_in_null_rows(child, offsets, valid):
        # One copy per row group, so rows are writable views (torch warns on read-only ones).
        if child.null_count:  # the slots of null rows (a fixed-size list has them): never read
            child = child.fill_null(False if t.is_boolean(value_type) else 0)
        flat = np.array(child.to_numpy(zero_copy_only=False))
        return _NumericLists(flat, offsets, valid, width)
    return _Lists(decode_column(child), offsets, valid)
