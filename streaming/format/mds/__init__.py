"""The MDS format: a self-describing binary shard per file (reader and writer)."""

from __future__ import annotations

from streaming.format.mds.reader import MDSReader
from streaming.format.mds.writer import MDSWriter

__all__ = ["MDSReader", "MDSWriter"]
