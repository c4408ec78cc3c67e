"""Old import path `streaming.base.format.json.writer`: aliases of `streaming.format.jsonl`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.format.jsonl.writer import JSONWriter

__all__ = ["JSONWriter"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
