"""Old import path `streaming.base.format.json.writer`: aliases of `streaming.format.jsonl`."""

from __future__ import annotations

from streaming.format.jsonl.writer import JSONWriter

__all__ = ["JSONWriter"]
