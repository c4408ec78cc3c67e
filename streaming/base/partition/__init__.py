"""Old import path `streaming.base.partition`: aliases of `streaming.order.partition`."""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.base._reimports import reimported as _reimported
from streaming.base.partition import orig, relaxed
from streaming.order.partition import (
    algos,
    get_partitions,
    get_partitions_orig,
    get_partitions_relaxed,
)

__all__ = [
    "algos",
    "get_partitions",
    "get_partitions_orig",
    "get_partitions_relaxed",
    "orig",
    "relaxed",
]

# The reference imported its submodules eagerly, and the names `streaming.base._reimports` lists.
__getattr__ = _reimported(__name__, then=submodules(__name__))
