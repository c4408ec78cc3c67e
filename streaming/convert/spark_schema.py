"""Spark SQL types -> MDS encodings: `SPARK_TO_MDS`, `infer_dataframe_schema`, `is_json_compatible`.

The mapping and the error messages are the reference's (spec §2.16), with two improvements:
arrays match by element type whatever their nullability flag, and errors name the column.
Importing this module needs pyspark; without it the ImportError says what to install.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streaming.errors import MissingDependencyError

try:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        ByteType,
        DataType,
        DateType,
        DayTimeIntervalType,
        DecimalType,
        DoubleType,
        FloatType,
        IntegerType,
        LongType,
        MapType,
        NullType,
        ShortType,
        StringType,
        StructType,
        TimestampNTZType,
        TimestampType,
    )
except ImportError as err:  # pragma: no cover - exercised in a subprocess test
    raise MissingDependencyError(
        f"The Spark converter needs pyspark ({err.name or 'pyspark'} is missing): "
        "pip install 'shardstream[spark]'") from err

__all__ = ["SPARK_TO_MDS", "infer_dataframe_schema", "is_json_compatible", "spark_to_mds_type"]

SPARK_TO_MDS: dict[DataType, str | None] = {
    ByteType(): "uint8",
    ShortType(): "uint16",
    IntegerType(): "int32",
    LongType(): "int64",
    FloatType(): "float32",
    DoubleType(): "float64",
    DecimalType(): "str_decimal",
    StringType(): "str",
    BinaryType(): "bytes",
    BooleanType(): None,
    TimestampType(): None,
    TimestampNTZType(): None,
    DateType(): None,
    DayTimeIntervalType(): None,
    ArrayType(IntegerType()): "ndarray:int32",
    ArrayType(ShortType()): "ndarray:int16",
    ArrayType(LongType()): "ndarray:int64",
    ArrayType(FloatType()): "ndarray:float32",
    ArrayType(DoubleType()): "ndarray:float64",
}
"""Spark type -> MDS encoding; None marks types MDS cannot store (reference table)."""

_BINARY_ONLY = ("pil", "png", "jpeg", "pkl")


def is_json_compatible(data_type: Any) -> bool:
    """Whether values of this Spark type are JSON (structs, arrays and maps of str/int/float/bool/
    null, recursively), as the reference decides it."""
    if isinstance(data_type, StructType):
        return all(is_json_compatible(f.dataType) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return is_json_compatible(data_type.elementType)
    if isinstance(data_type, MapType):
        return is_json_compatible(data_type.keyType) and is_json_compatible(data_type.valueType)
    return isinstance(data_type, (StringType, IntegerType, FloatType, BooleanType, NullType))


def spark_to_mds_type(data_type: Any, column: str | None = None) -> str:
    """The MDS encoding of a Spark type.

    Raises:
        ValueError: ``<type> is not supported by dataframe_to_mds`` (plus the column name).
    """
    if isinstance(data_type, DecimalType):
        found = SPARK_TO_MDS[DecimalType()]
    elif isinstance(data_type, ArrayType):
        found = SPARK_TO_MDS.get(ArrayType(data_type.elementType))
    else:
        found = SPARK_TO_MDS.get(data_type)
    if found is None:
        where = f" (column `{column}`)" if column else ""
        raise ValueError(
            f"{data_type} is not supported by dataframe_to_mds{where}. Cast the column to a "
            "supported type or drop it before converting.")
    return found


def _check_user_column(dataframe: Any, name: str, encoding: str) -> None:
    """Validate one user-given column encoding against the DataFrame (reference rules)."""
    if name not in dataframe.columns:
        raise ValueError(f"{name} is not a column of input dataframe: {dataframe.columns}")
    parts = encoding.split(":")
    if parts[0] == "ndarray" and len(parts) == 3:
        encoding = ":".join(parts[:2])
    actual = dataframe.schema[name].dataType
    if encoding not in {v for v in SPARK_TO_MDS.values() if v}:
        if encoding == "json":
            if is_json_compatible(actual):
                return
            raise ValueError(f"{name} can not be encoded by MDS JSON.")
        if encoding in _BINARY_ONLY:
            if isinstance(actual, BinaryType):
                return
            raise ValueError(f"Non-binary col {name} cannot encode as {encoding}.")
        raise ValueError(f"{encoding} is not supported by dataframe_to_mds")
    mapped = spark_to_mds_type(actual, name)
    if encoding != mapped:
        raise ValueError(f"Mismatched types: column name `{name}` is `{mapped}` in DataFrame but "
                         f"`{encoding}` in user_defined_cols")


def infer_dataframe_schema(dataframe: Any,
                           user_defined_cols: Mapping[str, Any] | None = None
                           ) -> dict[str, str] | None:
    """MDS columns for a Spark DataFrame, or a check of the user's columns against it.

    Args:
        dataframe: the Spark DataFrame.
        user_defined_cols: column name -> MDS encoding given by the user.

    Returns:
        The inferred ``{column: encoding}`` without `user_defined_cols`, else None once the
        user's columns passed.

    Raises:
        ValueError: the reference's messages: an unsupported type (naming the column here), an
            unknown column, an encoding the column's type cannot take, or a mismatch.
    """
    if user_defined_cols is not None:
        for name, encoding in user_defined_cols.items():
            _check_user_column(dataframe, name, encoding)
        return None
    return {f.name: spark_to_mds_type(f.dataType, f.name) for f in dataframe.schema.fields}
