"""Old import path `streaming.base.format.xsv.encodings`: aliases of `streaming.format.xsv`."""

from __future__ import annotations

from streaming.format.xsv.encodings import (
    Encoding as Encoding,
    Float as Float,
    Int as Int,
    Str as Str,
    _encodings as _encodings,
    is_xsv_encoding,
    xsv_decode,
    xsv_encode,
)

# As the reference's: a star import brings only these functions, never the classes (whose
# names, `List`, `PIL`, `Int`..., would shadow the user's). The classes stay importable, and
# `X as X` re-exports them to type checkers (mypy --strict, pyright) as the reference's are.
__all__ = ["is_xsv_encoding", "xsv_decode", "xsv_encode"]
