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

# As the reference's: a star import brings only these functions, never the classes (whose
# names, `List`, `PIL`, `Int`..., would shadow the user's). The classes stay importable.
__all__ = ["is_xsv_encoding", "xsv_decode", "xsv_encode"]
