"""The MDS format: a self-describing binary shard per file (reader and writer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from streaming.format.mds.reader import MDSReader
from streaming.lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from streaming.format.mds.writer import MDSWriter

# the writer loads on first use: a reading process never needs it
__getattr__ = lazy_names(__name__, {"MDSWriter": "streaming.format.mds.writer"})

__all__ = ["MDSReader", "MDSWriter"]
