"""Old import path `streaming.base.format.base.writer`: aliases of `streaming.format.writer`."""

from __future__ import annotations

from streaming.format.writer import JointWriter, SplitWriter, Writer

__all__ = ["JointWriter", "SplitWriter", "Writer"]
