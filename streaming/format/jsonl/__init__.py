"""The JSON-lines format (index name ``json``): data lines plus an offsets meta file."""

from __future__ import annotations

from streaming.format.jsonl.reader import JSONReader
from streaming.format.jsonl.writer import JSONWriter

__all__ = ["JSONReader", "JSONWriter"]
