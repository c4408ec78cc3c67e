"""Arrow arrays -> the per-row values `MDSWriter` takes under a column's encoding.

`column_values` casts where the chosen encoding needs another type; fixed-size numbers and
fixed-shape arrays come out pre-encoded (bytes sliced from one numpy buffer), which the writer
stores as they are. Binary values are taken as already encoded (the writer's rule), so image
bytes go into ``jpeg``/``png`` columns untouched; in ``json``/``pkl`` columns they are encoded
here. `table_rows` makes a batch's samples, its errors naming the row of the whole input.
Pure: no files, no processes.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.convert.columns import (
    _NAN_FOR_NULL,
    _NULLABLE,
    _SCALARS,
    ConversionError,
    _holds_bytes,
    _numeric_name,
)
from streaming.format.encodings import get_encoding

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["column_values", "partition_rows", "table_rows"]


def _at_row(err: ConversionError, row: int) -> ConversionError:
    """`err`, which names `row` of the array at hand, marked so that `table_rows` can say which
    row of the file that is (an array is one batch of it)."""
    err.row = row  # type: ignore[attr-defined]
    return err


def _fixed_bytes(values: np.ndarray, width: int) -> list[bytes]:
    """One bytes object of `width` bytes per row of a C-contiguous array."""
    flat = np.ascontiguousarray(values).reshape(len(values), -1).view(np.uint8)
    return flat.reshape(len(values), width).view(f"V{width}").ravel().tolist()


def _numpy(array: pa.Array, dtype: str, name: str) -> np.ndarray:
    """An Arrow array of numbers as numpy in `dtype`, refusing values it cannot hold.

    An integer target takes Arrow's checked cast: a value out of range (300 as uint8, a uint64
    above 2**63 as int64) or a float with a fraction fails, as ``MDSWriter`` fails on
    ``np.uint8(300)``, instead of wrapping around in silence. A float target may round (as
    float64 to float32 does) but not overflow to infinity.
    """
    import pyarrow as pa

    target = np.dtype(dtype)
    numeric = (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)
               or pa.types.is_boolean(array.type))
    if not numeric or (target.kind in "iub" and array.type != pa.from_numpy_dtype(target)):
        array = _cast(array, pa.from_numpy_dtype(target), name)
    values = array.to_numpy(zero_copy_only=False)
    with np.errstate(over="ignore", invalid="ignore"):
        cast = values.astype(target.newbyteorder("<"), copy=False)
    if target.kind == "f" and values.dtype.kind in "iuf":
        overflow = np.isinf(cast) & np.isfinite(values)
        if overflow.any():
            row = int(np.flatnonzero(overflow)[0])
            raise ConversionError(f"Column {name!r}: value {values[row].item()!r} is out of range "
                                  f"for {target.name} (it would become infinity).")
    return cast


def _cast(array: pa.Array, target: pa.DataType, name: str) -> pa.Array:
    try:
        return array.cast(target)
    except Exception as err:  # pyarrow raises ArrowInvalid / ArrowNotImplementedError
        raise ConversionError(f"Column {name!r}: cannot convert {array.type} to {target}: {err}"
                              ) from err


def _list_parts(array: pa.Array, dtype: str | None, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Flat values (numpy, `dtype` or the Arrow one) and int64 row offsets of a list array."""
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_fixed_size_list(array.type):
        size = array.type.list_size
        offsets = np.arange(len(array) + 1, dtype=np.int64) * size
        flat = array.flatten()
    elif pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        offsets = array.offsets.to_numpy().astype(np.int64)
        flat = array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        offsets = offsets - offsets[0]
    else:
        raise ConversionError(f"Column {name!r} of type {array.type} is not a list, so it "
                              "cannot be stored as an ndarray.")
    if flat.null_count:
        raise ConversionError(f"Column {name!r} has lists with null elements, which an "
                              "ndarray cannot hold.")
    dtype = dtype or _numeric_name(flat.type)
    if dtype is None:
        raise ConversionError(f"Column {name!r}: lists of {flat.type} cannot be an ndarray.")
    return _numpy(flat, dtype, name), offsets


def _ndarray_values(array: pa.Array, encoding: str, name: str) -> list[Any]:
    parts = encoding.split(":")
    dtype = parts[1] if len(parts) > 1 else None
    values, offsets = _list_parts(array, dtype, name)
    lengths = np.diff(offsets)
    if len(lengths) and not lengths.all():
        row = int(np.flatnonzero(lengths == 0)[0])
        raise _at_row(ConversionError(
            f"Column {name!r} row {row} is an empty list, which MDS ndarray cannot store; use "
            f"columns={{{name!r}: 'json'}}."), row)
    if len(parts) == 3:
        shape = tuple(int(d) for d in parts[2].split(","))
        size = int(np.prod(shape))
        if len(lengths) and (lengths != size).any():
            row = int(np.flatnonzero(lengths != size)[0])
            raise _at_row(ConversionError(
                f"Column {name!r} row {row} has {int(lengths[row])} values, but {encoding} "
                f"needs {size}."), row)
        return _fixed_bytes(values.reshape(len(lengths), size), size * values.itemsize)
    bounds = offsets.tolist()  # plain slices: np.split costs ~3 µs per row
    return [values[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _python(array: pa.Array, target: Any, name: str) -> list[Any]:
    import pyarrow as pa

    if target is not None and array.type != target and not (
            target == pa.string() and pa.types.is_large_string(array.type)):
        array = _cast(array, target, name)
    # A map is a dict to its user (Spark's and pandas' view, and what the reference stores);
    # Arrow would give a list of (key, value) pairs.
    return array.to_pylist(maps_as_pydicts="strict")


def _decimals(array: pa.Array, name: str) -> list[Any]:
    import pyarrow as pa

    if pa.types.is_decimal(array.type):
        return array.to_pylist()
    return [decimal.Decimal(text) for text in _python(array, pa.string(), name)]


def _extractor(encoding: str) -> Callable[[Any, str], list[Any]]:
    import pyarrow as pa

    family = encoding.split(":")[0]
    if family in _SCALARS or family == "int":
        dtype = "int64" if family == "int" else family
        width = np.dtype(dtype).itemsize
        return lambda a, n: _fixed_bytes(_numpy(a, dtype, n), width)
    if family == "ndarray":
        return lambda a, n: _ndarray_values(a, encoding, n)
    simple = {"str": pa.string(), "str_int": pa.int64(), "str_float": pa.float64()}
    if family in simple:
        return lambda a, n: _python(a, simple[family], n)
    if family == "str_decimal":
        return _decimals
    if family == "bytes":
        return lambda a, n: _python(a, None if _is_binary(a.type) else pa.binary(), n)
    return lambda a, n: _python(a, None, n)  # json, pkl, images: Python objects / bytes as-is


def _is_binary(arrow_type: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)


def column_values(array: pa.Array, encoding: str, name: str) -> list[Any]:
    """The values of one Arrow column in the form `MDSWriter` stores under `encoding`.

    Raises:
        ConversionError: nulls in a column that cannot store them, or values that do not fit
            the encoding; the message names the column and the first bad row.
    """
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if isinstance(array.type, pa.BaseExtensionType) and encoding.startswith("ndarray"):
        array = array.storage  # a tensor: its rows are the flat values (`_tensor_encoding`)
    if array.null_count and encoding in _NAN_FOR_NULL:
        if not pa.types.is_floating(array.type):
            array = _cast(array, pa.float64(), name)
        array = array.fill_null(pa.scalar(float("nan"), array.type))
    if array.null_count and encoding not in _NULLABLE:
        row = int(np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0])
        instead = (f"use columns={{{name!r}: 'pkl'}} (--column {name}=pkl; its readers then "
                   "need allow_unsafe_types=True)" if _holds_bytes(array.type) else
                   f"use columns={{{name!r}: 'json'}} (--column {name}=json)")
        raise _at_row(ConversionError(
            f"Column {name!r} row {row} is null; MDS has no null value for {encoding!r}. Fill "
            f"the nulls or {instead}."), row)
    get_encoding(encoding)  # unknown encodings fail here, before any row is touched
    if pa.types.is_temporal(array.type) and encoding.startswith(("int", "uint")):
        # "raw ticks", as the no-encoding message offers: days, or the type's time unit, since
        # the epoch (Arrow refuses to cast a date to an integer, but its storage is one).
        array = array.view(pa.int32() if array.type.bit_width == 32 else pa.int64())
    if not len(array):
        return []
    values = _extractor(encoding)(array, name)
    if encoding.split(":")[0] in _NULLABLE and _holds_bytes(array.type):
        # The writer stores a `bytes` value as already encoded whatever the column's encoding
        # (the reference's rule for pre-encoded columns): a bytes value in a json or pkl
        # column was written raw, and no reader could decode it. Encoded here instead.
        return _bytes_encoded(values, encoding, name)
    return values


def _bytes_encoded(values: list[Any], encoding: str, name: str) -> list[Any]:
    """`values` with each `bytes` one encoded by `encoding` (pkl pickles it; json cannot)."""
    codec = get_encoding(encoding)
    out = list(values)
    for row, value in enumerate(values):
        if isinstance(value, bytes):
            try:
                out[row] = codec.encode(value)
            except (TypeError, ValueError) as err:
                raise _at_row(ConversionError(
                    f"Column {name!r} row {row}: {encoding} cannot store bytes ({err})."),
                    row) from err
    return out


def table_rows(table: pa.RecordBatch | pa.Table, columns: Mapping[str, str],
               first_row: int = 0) -> list[dict[str, Any]]:
    """The rows of `table` as samples for `MDSWriter` (only the listed columns).

    Args:
        first_row: the row of the whole input `table` starts at: errors name rows of the
            input, not of this batch (a null at row 99,995 was reported at row 24,304).
    """
    names = list(columns)
    missing = [n for n in names if n not in table.schema.names]
    if missing:
        raise ConversionError(f"Column(s) {missing} are not in the input: {table.schema.names}.")
    try:
        values = [column_values(table.column(n), columns[n], n) for n in names]
    except ConversionError as err:
        row = getattr(err, "row", None)
        if row is None or not first_row:
            raise
        raise _at_row(ConversionError(str(err).replace(f"row {row}", f"row {row + first_row}",
                                                       1)), row + first_row) from err
    return [dict(zip(names, row)) for row in zip(*values)]


def partition_rows(table: pa.RecordBatch | pa.Table, columns: Mapping[str, str], first_row: int,
                   partition: int) -> list[dict[str, Any]]:
    """`table_rows` of a table inside one partition of a cluster engine's input (Spark, Dask,
    Ray), where the partition's place in the whole input is not known: an error's row is
    counted from the partition's start, and says so."""
    try:
        return table_rows(table, columns, first_row)
    except ConversionError as err:
        raise ConversionError(f"{err} (In partition {partition}; rows are counted from the "
                              "start of that partition.)") from err
