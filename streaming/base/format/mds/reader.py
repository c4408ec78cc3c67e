"""Old import path `streaming.base.format.mds.reader`: aliases of `streaming.format.mds.reader`."""

from __future__ import annotations

from streaming.format.mds.reader import MDSReader

__all__ = ["MDSReader"]
