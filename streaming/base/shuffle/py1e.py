"""Old import path `streaming.base.shuffle.py1e`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.order.shuffle.py1e import get_shuffle_py1e

__all__ = [
    "get_shuffle_py1e",
]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
