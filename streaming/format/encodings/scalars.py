"""Fixed-size numeric MDS encodings: `int` and the eleven numpy scalar types.

Every value is stored little-endian in `size` bytes, so all of them expose `fixed_dtype` /
`fixed_shape == ()` and decode a whole column of a shard with one strided view (`decode_many`).
"""

from __future__ import annotations

import struct
import sys
from typing import Any, ClassVar

import numpy as np

from streaming.errors import ShardFormatError
from streaming.format.encodings.base import Encoding, typed_rows
from streaming.format.encodings.table import register_encoding

__all__ = [
    "Float16",
    "Float32",
    "Float64",
    "Int",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Scalar",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
]

_NATIVE_LE = sys.byteorder == "little"
_INT64 = struct.Struct("<q")


class Int(Encoding):
    """A Python int stored as int64; decodes to a Python int (bools pass the type check)."""

    size = 8
    fixed_dtype = np.dtype("<i8")
    fixed_shape = ()
    struct_code = "q"

    def encode(self, obj: int) -> bytes:
        self._validate(obj, int)
        return obj.to_bytes(8, "little", signed=True)  # OverflowError past int64, like numpy

    def decode(self, data: bytes | memoryview) -> int:
        try:
            return _INT64.unpack_from(data)[0]
        except struct.error as err:
            raise ShardFormatError(f"int needs 8 bytes, got {len(data)}.") from err

    def decode_many(self, rows: np.ndarray) -> list[int]:
        return typed_rows(rows, self.fixed_dtype)[:, 0].tolist()


class Scalar(Encoding):
    """A numpy scalar of one dtype; decodes to a numpy scalar of that dtype.

    Encoding casts like numpy's constructor does (3.7 -> 3 for ints, '5' -> 5), raising
    OverflowError for Python ints out of range, exactly as the reference.

    Args:
        dtype: The numpy scalar type (`np.uint16`), or anything `np.dtype` accepts.
    """

    fixed_dtype: np.dtype  # always set: every scalar has a fixed size

    def __init__(self, dtype: Any) -> None:
        np_dtype = np.dtype(dtype)
        self.dtype = np_dtype.type
        self.size = np_dtype.itemsize
        self.fixed_dtype = np_dtype.newbyteorder("<")
        self.fixed_shape = ()

    def encode(self, obj: Any) -> bytes:
        value = self.dtype(obj)
        return value.tobytes() if _NATIVE_LE else value.byteswap().tobytes()

    def decode(self, data: bytes | memoryview) -> Any:
        return np.frombuffer(data, self.fixed_dtype)[0]

    def decode_many(self, rows: np.ndarray) -> np.ndarray:
        """A 1-D read-only view of the column; its items are numpy scalars like `decode`'s."""
        return typed_rows(rows, self.fixed_dtype)[:, 0]


class _NamedScalar(Scalar):
    """A `Scalar` whose dtype is fixed by the subclass, so it is constructible with no args."""

    _type: ClassVar[type]

    def __init__(self) -> None:
        super().__init__(self._type)


class UInt8(_NamedScalar):
    """Store uint8."""

    _type = np.uint8


class UInt16(_NamedScalar):
    """Store uint16."""

    _type = np.uint16


class UInt32(_NamedScalar):
    """Store uint32."""

    _type = np.uint32


class UInt64(_NamedScalar):
    """Store uint64."""

    _type = np.uint64


class Int8(_NamedScalar):
    """Store int8."""

    _type = np.int8


class Int16(_NamedScalar):
    """Store int16."""

    _type = np.int16


class Int32(_NamedScalar):
    """Store int32."""

    _type = np.int32


class Int64(_NamedScalar):
    """Store int64 (as a numpy scalar; `Int` decodes to a Python int instead)."""

    _type = np.int64


class Float16(_NamedScalar):
    """Store float16."""

    _type = np.float16


class Float32(_NamedScalar):
    """Store float32."""

    _type = np.float32


class Float64(_NamedScalar):
    """Store float64."""

    _type = np.float64


register_encoding("int", Int)
register_encoding("uint8", UInt8)
register_encoding("uint16", UInt16)
register_encoding("uint32", UInt32)
register_encoding("uint64", UInt64)
register_encoding("int8", Int8)
register_encoding("int16", Int16)
register_encoding("int32", Int32)
register_encoding("int64", Int64)
register_encoding("float16", Float16)
register_encoding("float32", Float32)
register_encoding("float64", Float64)
