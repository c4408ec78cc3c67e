"""Old import path `streaming.base.format.base.writer`: aliases of `streaming.format.writer`
and `streaming.format.writer_layouts`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.format.writer import Writer
from streaming.format.writer_layouts import JointWriter, SplitWriter

__all__ = ["JointWriter", "SplitWriter", "Writer"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
