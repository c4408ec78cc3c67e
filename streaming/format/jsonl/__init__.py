"""The JSON-lines format (index name ``json``): data lines plus an offsets meta file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from streaming.format.jsonl.reader import JSONReader
from streaming.lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from streaming.format.jsonl.writer import JSONWriter

# the writer loads on first use: a reading process never needs it
__getattr__ = lazy_names(__name__, {"JSONWriter": "streaming.format.jsonl.writer"})

__all__ = ["JSONReader", "JSONWriter"]
