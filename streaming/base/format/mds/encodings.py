"""Old import path `streaming.base.format.mds.encodings`: aliases of `streaming.format.encodings`.

`_encodings` is the very dict the registry reads, so the documented way of adding an encoding
(`_encodings['complex128'] = MyEncoding`) keeps working through this path.
"""

from __future__ import annotations

from streaming.format.encodings import (
    JPEG as JPEG,
    JSON as JSON,
    PIL as PIL,
    PNG as PNG,
    Bytes as Bytes,
    Encoding as Encoding,
    Float16 as Float16,
    Float32 as Float32,
    Float64 as Float64,
    Int as Int,
    Int8 as Int8,
    Int16 as Int16,
    Int32 as Int32,
    Int64 as Int64,
    JPEGArray as JPEGArray,
    JPEGList as JPEGList,
    List as List,
    NDArray as NDArray,
    Pickle as Pickle,
    PILList as PILList,
    PNGList as PNGList,
    Scalar as Scalar,
    Str as Str,
    StrDecimal as StrDecimal,
    StrEncoding as StrEncoding,
    StrFloat as StrFloat,
    StrInt as StrInt,
    UInt8 as UInt8,
    UInt16 as UInt16,
    UInt32 as UInt32,
    UInt64 as UInt64,
    _encodings as _encodings,
    _unsafe_encodings as _unsafe_encodings,
    get_mds_encoded_size,
    get_mds_encodings,
    is_mds_encoding,
    is_mds_encoding_safe,
    mds_decode,
    mds_encode,
)

# As the reference's: a star import brings only these functions, never the classes (whose
# names, `List`, `PIL`, `Int`..., would shadow the user's). The classes stay importable, and
# `X as X` re-exports them to type checkers (mypy --strict, pyright) as the reference's are.
__all__ = [
    "get_mds_encoded_size",
    "get_mds_encodings",
    "is_mds_encoding",
    "is_mds_encoding_safe",
    "mds_decode",
    "mds_encode",
]
