"""The `ndarray[:<dtype>[:<d0>,<d1>,...]]` MDS encoding: numpy arrays, zero-copy on decode.

Layout, with each part present only when the encoding string does not fix it:
`[dtype code: 1 byte] [(ndim << 2) | shape-int code: 1 byte] [shape: ndim uints] [values, C order]`.
The shape integers use the smallest of uint8/16/32/64 that holds the largest dimension. All
integers and values are little-endian. Decoding returns a read-only view over the given bytes.
"""

from __future__ import annotations

import math
import struct
from typing import Any, cast

import numpy as np

from streaming.errors import ShardFormatError
from streaming.format.encodings.base import Encoding, EncodingConfigError, typed_rows
from streaming.format.encodings.table import register_encoding

__all__ = ["NDArray"]

# Value dtype code <-> dtype name, and shape-int code <-> dtype name: part of the file format.
_CODE_TO_VALUE_NAME = {
    8: "uint8",
    9: "int8",
    16: "uint16",
    17: "int16",
    18: "float16",
    32: "uint32",
    33: "int32",
    34: "float32",
    64: "uint64",
    65: "int64",
    66: "float64",
}
_CODE_TO_SHAPE_NAME = {0: "uint8", 1: "uint16", 2: "uint32", 3: "uint64"}

_LE_DTYPES = {name: np.dtype(name).newbyteorder("<") for name in _CODE_TO_VALUE_NAME.values()}
_CODE_TO_LE_DTYPE = {code: _LE_DTYPES[name] for code, name in _CODE_TO_VALUE_NAME.items()}
_NAME_TO_CODE_BYTE = {name: bytes([code]) for code, name in _CODE_TO_VALUE_NAME.items()}
_DTYPES_TEXT = f"An ndarray's dtype is one of {', '.join(sorted(_LE_DTYPES))}."
_SHAPE_FORMAT_CHARS = "BHIQ"  # struct codes of uint8/16/32/64, indexed by shape-int code
_MAX_NDIM = 63  # the header keeps ndim in 6 bits

# header byte -> (struct reading the ndim shape ints, their byte count); filled on first sight.
_shape_readers: dict[int, tuple[struct.Struct, int]] = {}


def _shape_reader(header: int) -> tuple[struct.Struct, int]:
    reader = _shape_readers.get(header)
    if reader is None:
        packer = struct.Struct(f"<{header >> 2}{_SHAPE_FORMAT_CHARS[header & 3]}")
        reader = _shape_readers[header] = (packer, packer.size)
    return reader


def _shape_header(shape: tuple[int, ...]) -> bytes:
    """The header byte plus the shape ints, in the smallest uint type that holds them."""
    ndim = len(shape)
    if ndim == 0:
        raise ValueError(
            "Attempting to encode a scalar with NDArray encoding. Please use a scalar encoding."
        )
    if ndim > _MAX_NDIM:
        raise ValueError(f"Array has too many axes: maximum {_MAX_NDIM}, got {ndim}.")
    largest = max(shape)
    code = 0 if largest < 1 << 8 else 1 if largest < 1 << 16 else 2 if largest < 1 << 32 else 3
    header = (ndim << 2) | code
    return bytes([header]) + _shape_reader(header)[0].pack(*shape)


def _parse_dtype(dtype: Any) -> str:
    try:
        name = np.dtype(dtype).name
    except TypeError as err:
        raise EncodingConfigError(f"Unsupported dtype: {dtype}. {_DTYPES_TEXT}") from err
    if name not in _LE_DTYPES:
        raise EncodingConfigError(f"Unsupported dtype: {dtype}. {_DTYPES_TEXT}")
    return name


def _parse_shape(shape: Any) -> tuple[int, ...]:
    dims = tuple(int(dim) for dim in shape)
    if not dims or min(dims) < 1:
        raise EncodingConfigError(f"A fixed shape needs dimensions >= 1, got {dims}.")
    return dims


class NDArray(Encoding):
    """A numpy array whose dtype and/or shape may be fixed by the encoding string.

    Args:
        dtype: The value dtype when fixed (one of the 11 numeric names, e.g. 'uint16').
        shape: The shape when fixed; every dimension >= 1.

    A decoded array owns its values whenever its input was a view (of a shard's mapping, say):
    a sample kept by the user must not pin the shard's mapping (and its file descriptor, and
    the disk space of an evicted shard), nor change if the file is rewritten in place. Batches
    (`read_columns`) are new arrays anyway; only `bytes` input, owned already, is viewed.
    """

    # The reference's lookup tables, kept under its names for code that reads them.
    _int2shape_dtype = dict(_CODE_TO_SHAPE_NAME)
    _shape_dtype2int = {v: k for k, v in _CODE_TO_SHAPE_NAME.items()}
    _int2value_dtype = dict(_CODE_TO_VALUE_NAME)
    _value_dtype2int = {v: k for k, v in _CODE_TO_VALUE_NAME.items()}

    def __init__(self, dtype: str | None = None, shape: tuple[int, ...] | None = None) -> None:
        self.dtype = None if dtype is None else _parse_dtype(dtype)
        self.shape = None if shape is None else _parse_shape(shape)
        self._le = None if self.dtype is None else _LE_DTYPES[self.dtype]
        self.size = self._get_static_size(self.dtype, self.shape)
        if self.size is not None:
            self.fixed_dtype = self._le
            self.fixed_shape = self.shape

    @classmethod
    def _get_static_size(cls, dtype: str | None, shape: tuple[int, ...] | None) -> int | None:
        if dtype is None or shape is None:
            return None
        return math.prod(shape) * _LE_DTYPES[dtype].itemsize

    @classmethod
    def from_str(cls, text: str) -> NDArray:
        """Parse the config after `ndarray:`: `''`, `'<dtype>'` or `'<dtype>:<d0>,<d1>,...'`."""
        args = text.split(":") if text else []
        if len(args) > 2:
            raise EncodingConfigError(f"Expected '<dtype>[:<d0>,<d1>,...]', got {text!r}.")
        dtype = args[0] if args else None
        try:
            shape = tuple(int(dim) for dim in args[1].split(",")) if len(args) == 2 else None
        except ValueError as err:
            raise EncodingConfigError(f"Bad shape {args[1]!r}: {err}.") from err
        return cls(dtype, shape)

    def stored_name(self, given: str) -> str:
        """The column-encoding string to write in index.json for `given` (one naming `self`).

        We accept any spelling numpy reads as one of the 11 dtypes (`'ndarray:i4'`,
        `'ndarray:<u2:3'`); the reference reads the dtype by its canonical name only, so the
        name is written canonical and files stay readable there. A canonical `given` is kept
        exactly as written (its bytes are then the reference's).
        """
        head, _, rest = given.partition(":")
        dtype_text, sep, shape_text = rest.partition(":")
        if self.dtype is None or dtype_text == self.dtype:
            return given
        return f"{head}:{self.dtype}{sep}{shape_text}"

    def encode(self, obj: np.ndarray) -> bytes:
        if type(obj) is not np.ndarray:
            obj = self._array_of(obj)
        if self._le is not None and obj.dtype == self._le:  # the common case: no name lookup
            name = cast(str, self.dtype)
        else:
            name = obj.dtype.name  # computed by numpy on every access: a few µs
            if name not in _LE_DTYPES:
                raise ValueError(f"Unsupported dtype: {name}.")
            if self.dtype is not None and name != self.dtype:
                raise ValueError(f"Wrong dtype: expected {self.dtype}, got {name}.")
        if obj.size == 0:
            raise ValueError("Attempting to encode a numpy array with 0 elements.")
        if self.shape is None:
            head = _shape_header(obj.shape)
        elif obj.shape != self.shape:
            raise ValueError(f"Wrong shape: expected {self.shape}, got {obj.shape}.")
        else:
            head = b""
        if self.dtype is None:
            head = _NAME_TO_CODE_BYTE[name] + head
        # Big-endian input is converted rather than written in the wrong order.
        values = np.ascontiguousarray(obj, _LE_DTYPES[name])
        return b"".join((head, values.data)) if head else values.tobytes()

    def _array_of(self, obj: Any) -> np.ndarray:
        """The array to store for a value that is not a plain ndarray (the reference's bytes):
        a masked array's data with the masked values filled (its `fill_value`, never the
        values hidden under the mask); a numpy scalar is refused as a Python one is."""
        if isinstance(obj, np.ma.MaskedArray):
            return np.asarray(obj.filled())
        if isinstance(obj, np.generic):
            raise ValueError("Attempting to encode a scalar with NDArray encoding. Please use "
                             "a scalar encoding.")
        self._validate(obj, np.ndarray)
        return obj

    def decode(self, data: bytes | memoryview) -> np.ndarray:
        if self.size is not None:  # hot path of fixed columns: no header to parse
            if len(data) != self.size:
                raise ShardFormatError(f"ndarray needs {self.size} bytes, got {len(data)}.")
            value = np.ndarray(cast(tuple[int, ...], self.shape), self._le, data)
            return value.copy() if isinstance(data, memoryview) else value
        dtype = self._le
        pos = 0
        try:
            if dtype is None:
                dtype = _CODE_TO_LE_DTYPE.get(data[0])
                if dtype is None:
                    raise ShardFormatError(f"Unknown ndarray dtype code {data[0]}.")
                pos = 1
            shape = self.shape
            if shape is None:
                header = data[pos]
                reader, nbytes = _shape_readers.get(header) or _shape_reader(header)
                shape = reader.unpack_from(data, pos + 1)
                pos += 1 + nbytes
        except (IndexError, struct.error) as err:
            raise ShardFormatError(f"ndarray header cut short ({len(data)} bytes).") from err
        nbytes = math.prod(shape) * dtype.itemsize
        if len(data) - pos != nbytes:
            raise ShardFormatError(
                f"ndarray of shape {shape} and dtype {dtype.name} needs {nbytes} bytes, "
                f"got {len(data) - pos}."
            )
        value = np.ndarray(shape, dtype, data, pos)
        return value.copy() if isinstance(data, memoryview) else value

    def decode_many(self, rows: np.ndarray) -> Any:
        if self.fixed_dtype is None:
            return super().decode_many(rows)
        values = typed_rows(rows, self.fixed_dtype).reshape((len(rows), *(self.shape or ())))
        return map(np.ndarray.copy, values)  # each its own, as `decode` (lazily, in order)


register_encoding("ndarray", NDArray)
