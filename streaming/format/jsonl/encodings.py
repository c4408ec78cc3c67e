"""Column types of JSONL shards: which Python values a `str` / `int` / `float` column accepts.

JSON needs no byte encoding of its own (the writer `json.dumps` each sample); these classes only
type-check values before writing. Importable as `streaming.base.format.json.encodings`.
"""

from __future__ import annotations

from typing import Any

from streaming.format.encodings.base import Encoding as _MDSEncoding

__all__ = ["Encoding", "Float", "Int", "Str", "is_json_encoded", "is_json_encoding"]


class Encoding:
    """A JSON column type; `is_encoded` returns True or raises AttributeError."""

    python_type: type = object

    @classmethod
    def is_encoded(cls, obj: Any) -> bool:
        """Whether `obj` fits this column (bool counts as int; int is not float).

        Raises:
            AttributeError: `data should be of type <expected>, but instead, found as <actual>`.
        """
        return cls._validate(obj, cls.python_type)

    @staticmethod
    def _validate(data: Any, expected_type: Any) -> bool:
        _MDSEncoding._validate(data, expected_type)
        return True


class Str(Encoding):
    """A str column."""

    python_type = str


class Int(Encoding):
    """An int column."""

    python_type = int


class Float(Encoding):
    """A float column."""

    python_type = float


_encodings: dict[str, type[Encoding]] = {"str": Str, "int": Int, "float": Float}


def is_json_encoding(encoding: str) -> bool:
    """Whether `encoding` is a JSON column type name."""
    return encoding in _encodings


def is_json_encoded(encoding: str, value: Any) -> bool:
    """Whether `value` fits column type `encoding` (raises like `Encoding.is_encoded`).

    Raises:
        KeyError: Unknown column type, as the reference.
    """
    return _encodings[encoding].is_encoded(value)
