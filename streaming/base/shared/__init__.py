"""Old import path `streaming.base.shared`: the reference's shared-memory objects.

Kept for user code and old tests; shardstream's runtime coordinates through `streaming.coord`.
"""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.base.shared.array import SharedArray
from streaming.base.shared.barrier import SharedBarrier
from streaming.base.shared.memory import SharedMemory
from streaming.base.shared.prefix import _get_path as _get_path, get_shm_prefix
from streaming.base.shared.scalar import SharedScalar

__all__ = ["SharedArray", "SharedBarrier", "SharedMemory", "get_shm_prefix", "SharedScalar"]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
