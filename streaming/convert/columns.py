"""Arrow columns -> MDS encodings: which encoding a column gets (`infer_columns`, overridable
per column), and the error of a conversion (`ConversionError`). The values a column's
encoding takes are made in `streaming.convert.column_values`. Pure: no files, no processes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.errors import MissingDependencyError, StreamingError
from streaming.format.encodings import is_mds_encoding

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ConversionError", "import_pyarrow", "infer_columns", "infer_encoding"]

_SCALARS = {"uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
            "float16", "float32", "float64"}
_NULLABLE = {"json", "pkl"}  # encodings that can store a missing value
# Float columns store a missing value as NaN, as the reference's pandas-based Spark converter
# and pandas itself do (a pandas float NaN reaches Arrow as a null).
_NAN_FOR_NULL = {"float16", "float32", "float64"}


class ConversionError(StreamingError, ValueError):
    """Input that cannot become an MDS dataset as asked; the message names column and source."""


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
