"""Inputs of the codec golden vectors: one or more representative values per MDS encoding, and
the byte strings fed to every compression and hash.

Pure numpy/Pillow/stdlib so that `data/make_codec_vectors.py` can import it under the reference
interpreter (mosaicml-streaming 0.13.0) and our tests under ours; values are built from fixed
patterns (no RNG), so both sides construct identical inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np

# Encodings whose bytes come from Pillow's codecs: compared by decoded pixels, not bytes.
PIXEL_COMPARED = frozenset({"jpeg", "png", "list[jpeg]", "list[png]", "jpeg_array_real"})
# Encodings whose bytes depend on the interpreter's pickle protocol.
PICKLE_DEPENDENT = frozenset({"pkl"})


def _pattern(shape: tuple[int, ...], dtype: str, scale: float = 1.0) -> np.ndarray:
    count = int(np.prod(shape))
    values = (np.arange(count, dtype=np.int64) * 7919 + 13) % 251
    if np.dtype(dtype).kind == "i":
        values = values - 125
    return (values * scale).astype(dtype).reshape(shape)


def _jpeg_bytes(mode: str) -> bytes:
    from io import BytesIO

    out = BytesIO()
    _image(mode, 8, 8).save(out, format="JPEG")
    return out.getvalue()


def _image(mode: str, width: int = 5, height: int = 4) -> Any:
    from PIL import Image

    channels = {"L": 1, "RGB": 3, "RGBA": 4}[mode]
    pixels = _pattern((height, width, channels), "uint8")
    if channels == 1:
        pixels = pixels[:, :, 0]
    return Image.fromarray(np.ascontiguousarray(pixels))  # mode follows from the array shape


# case id -> (encoding string, factory of the value to encode)
MDS_CASES: dict[str, tuple[str, Callable[[], Any]]] = {
    "bytes": ("bytes", lambda: b"\x00\x01hello\xff"),
    "bytes_empty": ("bytes", lambda: b""),
    "str": ("str", lambda: "h\u00e9llo w\u00f6rld \u2713 \U0001f680"),
    "str_empty": ("str", lambda: ""),
    "int": ("int", lambda: -123456789012),
    "int_max": ("int", lambda: 2**63 - 1),
    "int_bool": ("int", lambda: True),
    "uint8": ("uint8", lambda: 200),
    "uint8_cast": ("uint8", lambda: 3.7),
    "uint8_str": ("uint8", lambda: "5"),
    "uint16": ("uint16", lambda: 65000),
    "uint32": ("uint32", lambda: 4_000_000_000),
    "uint64": ("uint64", lambda: 2**64 - 1),
    "int8": ("int8", lambda: -100),
    "int16": ("int16", lambda: -30000),
    "int32": ("int32", lambda: -2_000_000_000),
    "int64": ("int64", lambda: -(2**63)),
    "float16": ("float16", lambda: 1.5),
    "float32": ("float32", lambda: 3.14159),
    "float64": ("float64", lambda: 2.718281828459045),
    "float64_nan": ("float64", lambda: float("nan")),
    "str_int": ("str_int", lambda: -12345678901234567890),
    "str_float": ("str_float", lambda: 42.0),
    "str_float_tiny": ("str_float", lambda: 1e-300),
    "str_decimal": ("str_decimal", lambda: Decimal("4E15")),
    "str_decimal_long": ("str_decimal", lambda: Decimal("-0.000123456789012345678901234567890")),
    "ndarray_int16_2x3": ("ndarray", lambda: _pattern((2, 3), "int16")),
    "ndarray_uint8_300": ("ndarray", lambda: _pattern((300,), "uint8")),
    "ndarray_float64_1x256x1": ("ndarray", lambda: _pattern((1, 256, 1), "float64", 0.5)),
    "ndarray_float16_u32shape": ("ndarray", lambda: _pattern((1, 70000), "float16")),
    "ndarray_fortran": ("ndarray", lambda: np.asfortranarray(_pattern((3, 4), "int32"))),
    "ndarray_dtype_uint16": ("ndarray:uint16", lambda: _pattern((4, 5), "uint16")),
    "ndarray_dtype_int64": ("ndarray:int64", lambda: _pattern((2, 2, 2), "int64")),
    "ndarray_fixed_float32": ("ndarray:float32:2,3", lambda: _pattern((2, 3), "float32", 0.25)),
    "ndarray_fixed_uint64": ("ndarray:uint64:5", lambda: _pattern((5,), "uint64")),
    "ndarray_fixed_int8": ("ndarray:int8:2,1,3", lambda: _pattern((2, 1, 3), "int8")),
    "pil_rgb": ("pil", lambda: _image("RGB")),
    "pil_l": ("pil", lambda: _image("L")),
    "jpeg_rgb": ("jpeg", lambda: _image("RGB", 16, 8)),
    "png_rgba": ("png", lambda: _image("RGBA")),
    "jpeg_array": ("jpeg_array", lambda: [b"\xff\xd8abc", b"\xff\xd8defgh"]),
    "jpegarray": ("jpegarray", lambda: [b"\xff\xd8x"]),
    "jpeg_array_real": ("jpeg_array", lambda: [_jpeg_bytes("RGB"), _jpeg_bytes("L")]),
    "list_pil": ("list[pil]", lambda: [_image("RGB"), _image("L", 3, 2)]),
    "list_pil_empty": ("list[pil]", lambda: []),
    "list_jpeg": ("list[jpeg]", lambda: [_image("RGB", 8, 8), _image("L", 8, 8)]),
    "list_png": ("list[png]", lambda: [_image("RGBA", 3, 3)]),
    "pkl": ("pkl", lambda: {"a": [1, 2.5, "x"], "b": (1, 2), "c": None}),
    "json": ("json", lambda: {"a": [1, 2.5, "x", None, True], "\u00e9": "\u00fc"}),
    "json_ndarray": ("json", lambda: _pattern((2, 2), "int32")),
}


def compression_inputs() -> dict[str, bytes]:
    """Named byte strings every compression vector is computed on."""
    text = b"".join(b"shard %d of the streaming dataset; " % (i % 37) for i in range(120))
    noise = bytes(((np.arange(3000, dtype=np.int64) * 2654435761) >> 7 & 0xFF).astype(np.uint8))
    return {"hello": b"hello", "empty": b"", "text": text, "noise": noise}


# (spec string, input name) pairs with committed reference outputs; gz needs a fixed mtime.
COMPRESSION_SPECS = (
    "br", "br:0", "br:1", "br:5", "bz2", "bz2:1", "bz2:5", "gz", "gz:0", "gz:1", "gz:6",
    "snappy", "zstd", "zstd:1", "zstd:9", "zstd:19", "zstd:22",
)
GZIP_MTIME = 1_700_000_000


def hash_inputs() -> dict[str, bytes]:
    """Named byte strings every hash vector is computed on."""
    return {"hello": b"hello", "empty": b"", "text": compression_inputs()["text"]}
