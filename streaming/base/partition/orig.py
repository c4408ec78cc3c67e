"""Old import path `streaming.base.partition.orig`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.order.partition.orig import get_partitions_orig

__all__ = [
    "get_partitions_orig",
]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
