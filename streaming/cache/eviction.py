"""Which shards to evict to make room: a pure decision, no files, no locks.

Given each shard's next use in the known sample order (`next_use`, from
`streaming.order.next_use`), it evicts the shards needed last or never again first (Belady's
rule) and uses recency only among equals; without it, least recently used first, as the
reference does. Which of the two is the `STREAMING_EVICTION` setting (`future_aware_policy`).
"""

from __future__ import annotations

import os

import numpy as np

from streaming.errors import StreamingError
from streaming.order.next_use import NEVER

__all__ = ["EVICTION_ENV", "NEVER", "CacheFullError", "choose_evictions", "future_aware_policy",
           "nothing_to_evict", "rank_evictions"]

#: Environment variable choosing the eviction policy: "future" (the default) or "lru".
EVICTION_ENV = "STREAMING_EVICTION"


def future_aware_policy() -> bool:
    """Whether `EVICTION_ENV` asks for the next-use rule ("future", the default) over "lru".

    Raises:
        ValueError: any other value.
    """
    policy = os.environ.get(EVICTION_ENV, "future").lower()
    if policy not in ("future", "lru"):
        raise ValueError(f"{EVICTION_ENV} must be 'future' or 'lru', got {policy!r}.")
    return policy == "future"


class CacheFullError(StreamingError, ValueError):
    """Even evicting every evictable shard would not make enough room."""


def choose_evictions(
    *,
    size_bytes: np.ndarray,
    resident: np.ndarray,
    evictable: np.ndarray,
    last_access: np.ndarray,
    usage_bytes: int,
    limit_bytes: int,
    needed_bytes: int,
    next_use: np.ndarray | None = None,
) -> np.ndarray:
    """Shard ids to evict, in order, so that `usage + needed <= limit`.

    Args:
        size_bytes: bytes each shard occupies in the cache when resident (int64, per shard).
        resident: bool per shard: present in the cache now.
        evictable: bool per shard: may be deleted (False for shards in use, being prepared, or
            that exist only locally and could never be fetched again).
        last_access: per-shard last access time (any monotonic unit); smaller is colder.
        usage_bytes: bytes the cache holds now.
        limit_bytes: the cache limit.
        needed_bytes: bytes about to be added.
        next_use: optional per-shard position of its next use in the upcoming order (`NEVER` if
            unused); shards used later are evicted first.

    Returns:
        int64 shard ids, best victim first; empty when no eviction is needed.

    Raises:
        CacheFullError: when the evictable shards cannot free enough room.
    """
    excess = usage_bytes + needed_bytes - limit_bytes
    if excess <= 0:
        return np.empty(0, np.int64)
    ranked = rank_evictions(resident=resident, evictable=evictable, last_access=last_access,
                            next_use=next_use)
    freed = np.cumsum(size_bytes[ranked])
    count = int(np.searchsorted(freed, excess, side="left")) + 1
    if count > len(ranked):
        raise nothing_to_evict(f"need {excess} more bytes, only "
                               f"{int(freed[-1]) if len(freed) else 0} bytes are evictable.")
    return ranked[:count]


def rank_evictions(*, resident: np.ndarray, evictable: np.ndarray, last_access: np.ndarray,
                   next_use: np.ndarray | None = None) -> np.ndarray:
    """The shards `choose_evictions` may take (resident and evictable), best victim first
    (int64 ids; its arguments mean the same)."""
    candidates = np.flatnonzero(resident & evictable)
    if next_use is None:
        order = np.argsort(last_access[candidates], kind="stable")
    else:
        # lexsort: last key is primary. Latest next use first, then coldest.
        order = np.lexsort((last_access[candidates], -next_use[candidates].astype(np.float64)))
    return candidates[order].astype(np.int64)


def nothing_to_evict(detail: str) -> CacheFullError:
    """The error for an eviction that finds too little to evict (the reference's wording)."""
    return CacheFullError("Attempted shard eviction, but there are no shards present locally "
                          f"to evict. Your cache limit may be too low: {detail}")
