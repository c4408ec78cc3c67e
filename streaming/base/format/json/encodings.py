"""Old import path `streaming.base.format.json.encodings`: aliases of `streaming.format.jsonl`."""

from __future__ import annotations

from streaming.format.jsonl.encodings import (
    Encoding,
    Float,
    Int,
    Str,
    _encodings,
    is_json_encoded,
    is_json_encoding,
)

__all__ = ["Encoding", "Float", "Int", "Str", "_encodings", "is_json_encoded", "is_json_encoding"]
