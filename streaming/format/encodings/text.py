"""Variable-size text-like MDS encodings: raw bytes, UTF-8 strings, and numbers spelled as digits.

`str_int` / `str_float` / `str_decimal` keep arbitrary precision by storing `str(value)` in UTF-8.
Decoders accept bytes or a memoryview over a shard.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

from streaming.format.encodings.base import Encoding
from streaming.format.encodings.table import register_encoding

__all__ = ["Bytes", "Str", "StrDecimal", "StrEncoding", "StrFloat", "StrInt"]


class Bytes(Encoding):
    """Bytes stored as they are."""

    def encode(self, obj: bytes) -> bytes:
        self._validate(obj, bytes)
        return obj

    def decode(self, data: bytes | memoryview) -> bytes:
        # Zero-copy when the reader hands us bytes; a view is copied so callers always get bytes.
        return data if type(data) is bytes else bytes(data)


class Str(Encoding):
    """A str stored as UTF-8."""

    def encode(self, obj: str) -> bytes:
        self._validate(obj, str)
        return obj.encode("utf-8")

    def decode(self, data: bytes | memoryview) -> str:
        # `bytes.decode` is the fastest for bytes (the pread path); a memoryview over a shard
        # has no `decode`, and catching that AttributeError cost 3.5x the decoding itself.
        if type(data) is bytes:
            return data.decode()
        return str(data, "utf-8")


class StrEncoding(Encoding):
    """Base of the numbers stored as their decimal string, for arbitrary precision.

    Subclasses name the Python type: values must be instances of it, and decoding calls it on
    the text.
    """

    python_type: ClassVar[type] = str

    def encode(self, obj: Any) -> bytes:
        self._validate(obj, self.python_type)
        return str(obj).encode("utf-8")

    def decode(self, data: bytes | memoryview) -> Any:
        return self.python_type(str(data, "utf-8"))


class StrInt(StrEncoding):
    """An int stored as its digits, e.g. b'-42'."""

    python_type = int

    def encode(self, obj: Any) -> bytes:
        if type(obj) is bool:  # an int, but `str(True)` is no int's text: the reference wrote
            return b"1" if obj else b"0"  # b'True', which no reader can decode
        return super().encode(obj)


class StrFloat(StrEncoding):
    """A float stored as `str(value)`, e.g. b'42.0'."""

    python_type = float


class StrDecimal(StrEncoding):
    """A Decimal stored as `str(value)`, e.g. b'4E+15'."""

    python_type = Decimal


register_encoding("bytes", Bytes)
register_encoding("str", Str)
register_encoding("str_int", StrInt)
register_encoding("str_float", StrFloat)
register_encoding("str_decimal", StrDecimal)
