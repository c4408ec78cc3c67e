"""Column types of CSV/TSV/XSV shards: value <-> field text for `str`, `int` and `float`.

Fields are `str(value)` on write and `int(...)` / `float(...)` on read, as the reference.
Importable as `streaming.base.format.xsv.encodings`.
"""

from __future__ import annotations

from typing import Any

from streaming.format.encodings.base import Encoding as _MDSEncoding

__all__ = ["Encoding", "Float", "Int", "Str", "is_xsv_encoding", "xsv_decode", "xsv_encode"]


class Encoding:
    """An XSV column type: class-level `encode` (type-checked) and `decode`."""

    python_type: type = object

    @classmethod
    def encode(cls, obj: Any) -> str:
        """The field text for `obj`.

        Raises:
            AttributeError: `obj` is not of this column's type.
        """
        cls._validate(obj, cls.python_type)
        return str(obj)

    @classmethod
    def decode(cls, obj: str) -> Any:
        """The value a field's text stands for."""
        return cls.python_type(obj)

    _validate = staticmethod(_MDSEncoding._validate)


class Str(Encoding):
    """A str column (fields are stored as they are)."""

    python_type = str

    @classmethod
    def encode(cls, obj: Any) -> str:
        cls._validate(obj, str)
        return obj

    @classmethod
    def decode(cls, obj: str) -> Any:
        return obj


class Int(Encoding):
    """An int column."""

    python_type = int

    @classmethod
    def encode(cls, obj: Any) -> str:
        cls._validate(obj, int)
        # A bool is an int, but `str(True)` would be a field that `int()` cannot read back
        # (the reference writes it so); it is stored as the number it stands for.
        return str(int(obj)) if isinstance(obj, bool) else str(obj)


class Float(Encoding):
    """A float column."""

    python_type = float


_encodings: dict[str, type[Encoding]] = {"str": Str, "int": Int, "float": Float}


def is_xsv_encoding(encoding: str) -> bool:
    """Whether `encoding` is an XSV column type name."""
    return encoding in _encodings


def xsv_encode(encoding: str, value: Any) -> str:
    """Field text of `value` for column type `encoding` (KeyError if unknown, as the reference)."""
    return _encodings[encoding].encode(value)


def xsv_decode(encoding: str, value: str) -> Any:
    """Value of field text `value` for column type `encoding`."""
    return _encodings[encoding].decode(value)
