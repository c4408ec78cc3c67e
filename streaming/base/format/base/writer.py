"""Old import path `streaming.base.format.base.writer`: aliases of `streaming.format.writer`
and `streaming.format.writer_layouts`."""

from __future__ import annotations

from streaming.format.writer import Writer
from streaming.format.writer_layouts import JointWriter, SplitWriter

__all__ = ["JointWriter", "SplitWriter", "Writer"]
