"""Old import path `streaming.base.format.json.encodings`: aliases of `streaming.format.jsonl`."""

from __future__ import annotations

from streaming.format.jsonl.encodings import (
    Encoding as Encoding,
    Float as Float,
    Int as Int,
    Str as Str,
    _encodings as _encodings,
    is_json_encoded,
    is_json_encoding,
)

# As the reference's: a star import brings only these functions, never the classes (whose
# names, `List`, `PIL`, `Int`..., would shadow the user's). The classes stay importable, and
# `X as X` re-exports them to type checkers (mypy --strict, pyright) as the reference's are.
__all__ = ["is_json_encoded", "is_json_encoding"]
