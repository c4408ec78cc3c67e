"""Old import path `streaming.base.format.mds.writer`: aliases of `streaming.format.mds.writer`."""

from __future__ import annotations

from streaming.format.mds.writer import MDSWriter

__all__ = ["MDSWriter"]
