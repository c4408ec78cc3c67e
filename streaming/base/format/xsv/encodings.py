"""Old import path `streaming.base.format.xsv.encodings`: aliases of `streaming.format.xsv`."""

from __future__ import annotations

from streaming.format.xsv.encodings import (
    Encoding,
    Float,
    Int,
    Str,
    _encodings,
    is_xsv_encoding,
    xsv_decode,
    xsv_encode,
)

__all__ = [
    "Encoding",
    "Float",
    "Int",
    "Str",
    "_encodings",
    "is_xsv_encoding",
    "xsv_decode",
    "xsv_encode",
]
