"""Old import path `streaming.base.format.mds.encodings`: aliases of `streaming.format.encodings`.

`_encodings` is the very dict the registry reads, so the documented way of adding an encoding
(`_encodings['complex128'] = MyEncoding`) keeps working through this path.
"""

from __future__ import annotations

from streaming.format.encodings import (
    JPEG,
    JSON,
    PIL,
    PNG,
    Bytes,
    Encoding,
    Float16,
    Float32,
    Float64,
    Int,
    Int8,
    Int16,
    Int32,
    Int64,
    JPEGArray,
    JPEGList,
    List,
    NDArray,
    Pickle,
    PILList,
    PNGList,
    Scalar,
    Str,
    StrDecimal,
    StrEncoding,
    StrFloat,
    StrInt,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    _encodings,
    _unsafe_encodings,
    get_mds_encoded_size,
    get_mds_encodings,
    is_mds_encoding,
    is_mds_encoding_safe,
    mds_decode,
    mds_encode,
)

# As the reference's: a star import brings only these functions, never the classes (whose
# names, `List`, `PIL`, `Int`..., would shadow the user's). The classes stay importable.
__all__ = [
    "get_mds_encoded_size",
    "get_mds_encodings",
    "is_mds_encoding",
    "is_mds_encoding_safe",
    "mds_decode",
    "mds_encode",
]
