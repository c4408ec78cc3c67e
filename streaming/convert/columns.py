"""Arrow columns -> MDS: which encoding a column gets, and its values ready for `MDSWriter`.

`infer_columns` maps an Arrow schema to MDS encodings (overridable per column); `column_values`
turns one Arrow array into the per-row values the writer takes, casting where the chosen
encoding needs another type. Fixed-size numbers and fixed-shape arrays come out pre-encoded
(bytes sliced from one numpy buffer), which the writer stores as they are. Binary values are
always taken as already encoded (the writer's rule), so image bytes go into ``jpeg``/``png``
columns untouched. Pure: no files, no processes.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.errors import MissingDependencyError, StreamingError
from streaming.format.encodings import get_encoding, is_mds_encoding

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ConversionError", "column_values", "import_pyarrow", "infer_columns",
           "infer_encoding", "table_rows"]

_SCALARS = {"uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
            "float16", "float32", "float64"}
_NULLABLE = {"json", "pkl"}  # encodings that can store a missing value
# Float columns store a missing value as NaN, as the reference's pandas-based Spark converter
# and pandas itself do (a pandas float NaN reaches Arrow as a null).
_NAN_FOR_NULL = {"float16", "float32", "float64"}


class ConversionError(StreamingError, ValueError):
    """Input that cannot become an MDS dataset as asked; the message names column and source."""


def _at_row(err: ConversionError, row: int) -> ConversionError:
    """`err`, which names `row` of the array at hand, marked so that `table_rows` can say which
    row of the file that is (an array is one batch of it)."""
    err.row = row  # type: ignore[attr-defined]
    return err


def import_pyarrow() -> Any:
    """pyarrow, or an ImportError that says how to install it."""
    try:
        import pyarrow
    except ImportError as err:

        raise MissingDependencyError(
            "Converting tables needs pyarrow: pip install pyarrow "
            "(or pip install 'shardstream[spark]')") from err
    return pyarrow


# ---- inference -----------------------------------------------------------------------------


def _numeric_name(arrow_type: pa.DataType) -> str | None:
    """The numpy dtype name of an Arrow integer/float type MDS can store, else None."""
    import pyarrow as pa

    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        name = np.dtype(arrow_type.to_pandas_dtype()).name
        return name if name in _SCALARS else None
    return None


def _is_json_like(arrow_type: pa.DataType) -> bool:
    import pyarrow as pa

    t = pa.types
    if t.is_struct(arrow_type):
        return all(_is_json_like(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        return _is_json_like(arrow_type.value_type)
    if t.is_map(arrow_type):
        return t.is_string(arrow_type.key_type) and _is_json_like(arrow_type.item_type)
    return bool(t.is_null(arrow_type) or t.is_boolean(arrow_type) or t.is_integer(arrow_type)
                or t.is_floating(arrow_type) or t.is_string(arrow_type)
                or t.is_large_string(arrow_type))


def infer_encoding(name: str, arrow_type: pa.DataType) -> str:
    """The MDS encoding for a column of this Arrow type.

    Numbers keep their width, text is ``str``, binary ``bytes``, decimals ``str_decimal``,
    lists of numbers ``ndarray:<dtype>`` (fixed-size lists and fixed-shape tensor extension
    types also fix the shape), and booleans, nulls, structs, maps and other lists ``json``.

    Raises:
        ConversionError: no MDS encoding fits (dates, times, durations...), naming the column.
    """
    import pyarrow as pa

    t = pa.types
    if t.is_dictionary(arrow_type):
        return infer_encoding(name, arrow_type.value_type)
    if isinstance(arrow_type, pa.BaseExtensionType):
        tensor = _tensor_encoding(arrow_type)
        if tensor:
            return tensor
    numeric = _numeric_name(arrow_type)
    if numeric:
        return numeric
    if t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return "str"
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or t.is_fixed_size_binary(
            arrow_type):
        return "bytes"
    if t.is_decimal(arrow_type):
        return "str_decimal"
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        value = _numeric_name(arrow_type.value_type)
        if value and t.is_fixed_size_list(arrow_type):
            return f"ndarray:{value}:{arrow_type.list_size}"
        if value:
            return f"ndarray:{value}"
    if _is_json_like(arrow_type):
        return "json"
    raise ConversionError(
        f"Column {name!r} has type {arrow_type}, which has no MDS encoding. Choose one, e.g. "
        f"columns={{{name!r}: 'str'}} (text) or 'int64' (raw ticks) or 'pkl'.")


def _tensor_encoding(arrow_type: pa.BaseExtensionType) -> str | None:
    """``ndarray:<dtype>:<shape>`` for a fixed-shape tensor extension type (Arrow's canonical
    ``fixed_shape_tensor``, Ray Data's tensor columns): a shape, and lists of numbers below."""
    import pyarrow as pa

    shape = getattr(arrow_type, "shape", None)
    storage = arrow_type.storage_type
    if not shape or not all(isinstance(d, int) and d > 0 for d in shape):
        return None
    if not (pa.types.is_list(storage) or pa.types.is_large_list(storage)
            or pa.types.is_fixed_size_list(storage)):
        return None
    value = _numeric_name(storage.value_type)
    return f"ndarray:{value}:{','.join(str(d) for d in shape)}" if value else None


def infer_columns(schema: pa.Schema, overrides: Mapping[str, str] | None = None,
                  include: Sequence[str] | None = None,
                  sample: pa.RecordBatch | pa.Table | None = None) -> dict[str, str]:
    """Column name -> MDS encoding for a table, inferred from its Arrow schema.

    Args:
        schema: the table's schema.
        overrides: encodings to use instead of the inferred ones (also for columns whose type
            has no encoding of its own).
        include: keep only these columns, in this order (default: all).
        sample: rows to look at; a column with nulls there is stored as ``json`` (MDS has no
            null), unless overridden, except a float column (its nulls become NaN).

    Raises:
        ConversionError: an unknown column in `overrides`/`include`, an invalid encoding, or a
            type with no encoding.
    """
    overrides = dict(overrides or {})
    if include is not None and not len(include):
        raise ConversionError("`include` names no column: a dataset without columns holds no "
                              "data. Leave it out to convert every column.")
    repeated = sorted({n for n in schema.names if list(schema.names).count(n) > 1})
    if repeated:
        raise ConversionError(f"The input names column(s) {repeated} more than once; a sample "
                              "holds one value per name. Rename them first.")
    names = list(include) if include is not None else list(schema.names)
    for name in list(overrides) + names:
        if name not in schema.names:
            raise ConversionError(f"Column {name!r} is not in the input: {schema.names}.")
    columns = {}
    for name in names:
        encoding = overrides.get(name)
        if encoding is None:
            encoding = infer_encoding(name, schema.field(name).type)
            if (sample is not None and sample.column(name).null_count
                    and encoding not in _NAN_FOR_NULL
                    and not _holds_bytes(schema.field(name).type)):  # JSON has no bytes:
                encoding = "json"  # such a column's nulls are refused, naming the row
        elif not _valid_encoding(encoding):
            raise ConversionError(f"Column {name!r}: {encoding!r} is not an MDS encoding.")
        columns[name] = encoding
    return columns


def _valid_encoding(encoding: str) -> bool:
    try:
        return is_mds_encoding(encoding)
    except (KeyError, AttributeError, ValueError):
        return False


# ---- values --------------------------------------------------------------------------------


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


def _holds_bytes(arrow_type: pa.DataType) -> bool:
    """Whether values of this type hold bytes anywhere (a binary column, Hugging Face's image
    struct of bytes and path): JSON cannot store them."""
    import pyarrow as pa

    t = pa.types
    if t.is_dictionary(arrow_type):
        return _holds_bytes(arrow_type.value_type)
    if isinstance(arrow_type, pa.BaseExtensionType):
        return _holds_bytes(arrow_type.storage_type)
    if t.is_struct(arrow_type):
        return any(_holds_bytes(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        return _holds_bytes(arrow_type.value_type)
    if t.is_map(arrow_type):
        return _holds_bytes(arrow_type.key_type) or _holds_bytes(arrow_type.item_type)
    return bool(t.is_binary(arrow_type) or t.is_large_binary(arrow_type)
                or t.is_fixed_size_binary(arrow_type))


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
