"""Old import path `streaming.base.distributed`: aliases of `streaming.distributed`."""

from __future__ import annotations

from streaming import distributed as _distributed
from streaming.distributed import *  # noqa: F403  (the same names, re-exported)

__all__ = list(_distributed.__all__)
