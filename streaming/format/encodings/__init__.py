"""MDS column encodings: the registry and every built-in encoding, under the reference's names.

Each family file registers its encodings next to their classes; importing them here fills
`_encodings`. Add an encoding by subclassing `Encoding` and calling `register_encoding` (or, as
the reference documents, `_encodings['name'] = Cls`). No torch, no storage, no PIL at import.
"""

from __future__ import annotations

from streaming.format.encodings.arrays import NDArray
from streaming.format.encodings.base import Encoding, EncodingConfigError
from streaming.format.encodings.images import JPEG, PIL, PNG, JPEGArray
from streaming.format.encodings.lists import JPEGList, List, PILList, PNGList
from streaming.format.encodings.scalars import (
    Float16,
    Float32,
    Float64,
    Int,
    Int8,
    Int16,
    Int32,
    Int64,
    Scalar,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
)
from streaming.format.encodings.serialized import JSON, Pickle
from streaming.format.encodings.table import (
    _encodings,
    _unsafe_encodings,
    get_encoding,
    get_mds_encoded_size,
    get_mds_encodings,
    is_mds_encoding,
    is_mds_encoding_safe,
    mds_decode,
    mds_encode,
    register_encoding,
)
from streaming.format.encodings.text import Bytes, Str, StrDecimal, StrEncoding, StrFloat, StrInt

__all__ = [
    "JPEG",
    "JSON",
    "PIL",
    "PNG",
    "Bytes",
    "Encoding",
    "EncodingConfigError",
    "Float16",
    "Float32",
    "Float64",
    "Int",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "JPEGArray",
    "JPEGList",
    "List",
    "NDArray",
    "PILList",
    "PNGList",
    "Pickle",
    "Scalar",
    "Str",
    "StrDecimal",
    "StrEncoding",
    "StrFloat",
    "StrInt",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "_encodings",
    "_unsafe_encodings",
    "get_encoding",
    "get_mds_encoded_size",
    "get_mds_encodings",
    "is_mds_encoding",
    "is_mds_encoding_safe",
    "mds_decode",
    "mds_encode",
    "register_encoding",
]
