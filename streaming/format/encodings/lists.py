"""List-of-images MDS encodings: `list[pil]`, `list[jpeg]`, `list[png]`.

Layout: `[reserved u32 = 0] [count u32] [count x size u32] [each element, encoded]`, where each
element uses the single-image encoding of the same name.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from streaming.format.encodings._framing import pack_frames, unpack_frames
from streaming.format.encodings.base import Encoding, ViewDecoder, reading_views
from streaming.format.encodings.images import JPEG, PIL, PNG
from streaming.format.encodings.table import register_encoding

__all__ = ["JPEGList", "List", "PILList", "PNGList"]

_RESERVED = b"\x00\x00\x00\x00"  # a u32 the reference set aside for future use; always 0


class List(Encoding):
    """A Python list of values that share one element encoding (`underlying_encoder()`)."""

    @cached_property
    def _element(self) -> Encoding:
        # Asked for at first use, not in `__init__`: users' subclasses (as the reference's
        # docs show) set their own attributes in an `__init__` that need not call ours.
        return self.underlying_encoder()

    @cached_property
    def _element_reader(self) -> ViewDecoder:
        return reading_views(self._element)  # a user's element encoding gets bytes

    def underlying_encoder(self) -> Encoding:
        """The encoding of each element."""
        raise NotImplementedError

    def encode(self, obj: list) -> bytes:
        self._validate(obj, list)
        return _RESERVED + pack_frames([self._element.encode(item) for item in obj])

    def decode(self, data: bytes | memoryview) -> list[Any]:
        return [self._element_reader.decode(part) for part in unpack_frames(data, len(_RESERVED))]


class PILList(List):
    """A list of PIL images stored as raw pixels."""

    def underlying_encoder(self) -> Encoding:
        return PIL()


class JPEGList(List):
    """A list of PIL images stored as JPEG."""

    def underlying_encoder(self) -> Encoding:
        return JPEG()


class PNGList(List):
    """A list of PIL images stored as PNG."""

    def underlying_encoder(self) -> Encoding:
        return PNG()


register_encoding("list[pil]", PILList)
register_encoding("list[jpeg]", JPEGList)
register_encoding("list[png]", PNGList)
