"""PIL-image MDS encodings: raw pixels (`pil`), `jpeg`, `png`, and pre-encoded `jpeg_array`.

Pillow is imported on first use, so reading non-image datasets never needs it; without it the
error names the pip command.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from io import BytesIO
from typing import TYPE_CHECKING, Any, ClassVar

from streaming.errors import MissingDependencyError, ShardFormatError, StreamingError
from streaming.format.encodings._framing import frame_count, pack_frames, unpack_frames
from streaming.format.encodings.base import Encoding
from streaming.format.encodings.table import register_encoding

if TYPE_CHECKING:  # pragma: no cover
    from PIL.Image import Image as PILImage

__all__ = ["JPEG", "JPEGArray", "PIL", "PNG", "UnstorableImageError"]

_PIL_HEADER = struct.Struct("<3I")  # width, height, len(mode)


def pil_image_module() -> Any:
    """`PIL.Image`, imported on first use."""
    try:
        from PIL import Image
    except ImportError as err:
        raise MissingDependencyError("Image encodings need Pillow: pip install pillow") from err
    return Image


def _check_image(obj: Any) -> None:
    Encoding._validate(obj, pil_image_module().Image)


def _open(data: bytes | memoryview) -> PILImage:
    return pil_image_module().open(BytesIO(data))


class PIL(Encoding):
    """Raw pixels: `[width u32][height u32][len(mode) u32][mode][img.tobytes()]`."""

    def encode(self, obj: PILImage) -> bytes:
        _check_image(obj)
        mode = obj.mode.encode("utf-8")
        width, height = obj.size
        return b"".join((_PIL_HEADER.pack(width, height, len(mode)), mode, obj.tobytes()))

    def decode(self, data: bytes | memoryview) -> PILImage:
        try:
            width, height, mode_size = _PIL_HEADER.unpack_from(data)
        except struct.error as err:
            raise ShardFormatError(f"pil header cut short ({len(data)} bytes).") from err
        start = _PIL_HEADER.size
        mode = str(data[start : start + mode_size], "utf-8")
        raw = data[start + mode_size :]
        # Pillow allocates the whole image before it finds the data short: a 201-byte value
        # whose header said 65535 x 65535 asked for gigabytes. Checked first, from the mode.
        needed = -(-width * _bits_per_pixel(mode) // 8) * height
        if len(raw) < needed:
            raise ShardFormatError(f"pil value holds {len(raw):,} bytes of pixels; its header's "
                                   f"{width} x {height} {mode} image needs {needed:,}.")
        return pil_image_module().frombytes(mode, (width, height), raw)


@functools.lru_cache(maxsize=64)
def _bits_per_pixel(mode: str) -> int:
    """Bits per pixel of a Pillow mode (the bytes of 8 pixels), from Pillow itself."""
    try:
        return len(pil_image_module().new(mode, (8, 1)).tobytes())
    except (ValueError, KeyError, TypeError):
        return 0  # a mode Pillow does not know: `frombytes` says so in its words


class _SavedImage(Encoding):
    """An image stored in a Pillow file format (`image_format`), decoded lazily by Pillow."""

    image_format: ClassVar[str] = ""

    def encode(self, obj: PILImage) -> bytes:
        _check_image(obj)
        out = BytesIO()
        obj.save(out, format=self.image_format)
        return out.getvalue()

    def decode(self, data: bytes | memoryview) -> PILImage:
        return _open(data)


class JPEG(_SavedImage):
    """JPEG bytes; an image opened from a JPEG file keeps that file's exact bytes."""

    image_format = "JPEG"

    def encode(self, obj: PILImage) -> bytes:
        _check_image(obj)
        from PIL.JpegImagePlugin import JpegImageFile

        filename = getattr(obj, "filename", None)
        if isinstance(obj, JpegImageFile) and filename:
            try:
                with open(filename, "rb") as f:
                    return f.read()
            except FileNotFoundError:
                pass  # the file went away since it was opened: re-encode the pixels instead
        return super().encode(obj)


class UnstorableImageError(StreamingError, ValueError, OSError):
    """An image a format cannot hold without loss. Also an `OSError`: Pillow's own refusal
    ("cannot write mode I as PNG"), which the reference let through, is one."""


class PNG(_SavedImage):
    """PNG bytes (lossless).

    A 32-bit grey (`I`) image is stored as PNG's 16-bit grey, which is what Pillow did itself
    before version 13 refused to write mode `I` as PNG; values outside 0..65535 cannot be stored
    without loss, so they raise instead of being clipped.
    """

    image_format = "PNG"

    def encode(self, obj: PILImage) -> bytes:
        _check_image(obj)
        if obj.mode == "I":
            obj = _as_16_bit_grey(obj)
        return super().encode(obj)


def _as_16_bit_grey(image: PILImage) -> PILImage:
    import numpy as np

    pixels = np.asarray(image)
    if pixels.size and (pixels.min() < 0 or pixels.max() > 0xFFFF):
        raise UnstorableImageError(f"PNG holds 16-bit grey at most; this mode 'I' image has values "
                         f"{pixels.min()}..{pixels.max()}, outside 0..65535. Use the 'pil' "
                         "encoding (raw pixels) to keep them")
    return image.convert("I;16")


class JPEGArray(Encoding):
    """Already-encoded JPEG byte strings: `[count u32][count x size u32][bytes...]`.

    Decodes to a list of PIL images.
    """

    def encode(self, obj: Sequence[bytes]) -> bytes:
        return pack_frames(list(obj))

    def decode(self, data: bytes | memoryview) -> list[PILImage]:
        if len(data) < 4:
            raise ValueError("Input data is too short to contain valid jpeg arrays")
        count = frame_count(data)
        if count == 0:
            raise ValueError("Negative number of images decoded")  # the reference's wording
        if len(data) < 4 + 4 * count:
            raise ValueError("Data is too short w.r.t the number of images decoded")
        return [_open(part) for part in unpack_frames(data)]


register_encoding("pil", PIL)
register_encoding("jpeg", JPEG)
register_encoding("png", PNG)
register_encoding("jpeg_array", JPEGArray)
register_encoding("jpegarray", JPEGArray)
