"""Old import path `streaming.base.partition.relaxed`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.order.partition.relaxed import get_partitions_relaxed

__all__ = [
    "get_partitions_relaxed",
]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
