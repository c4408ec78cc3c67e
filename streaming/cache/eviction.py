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
    candidates = np.flatnonzero(resident & evictable)
    # Usually one victim or a few make the room: rank only the best `want` (linear time, under
    # the node's lock), widening when they do not free enough; a full sort of 10^5 resident
    # shards per eviction made a run of evictions quadratic (the simulator's most of all).
    want = 1
    while True:
        ranked = _best(candidates, want, last_access, next_use)
        freed = np.cumsum(size_bytes[ranked])
        if (len(freed) and freed[-1] >= excess) or len(ranked) == len(candidates):
            break
        want *= 8
    count = int(np.searchsorted(freed, excess, side="left")) + 1
    if count > len(ranked):
        raise nothing_to_evict(f"need {excess} more bytes, only "
                               f"{int(freed[-1]) if len(freed) else 0} bytes are evictable.")
    return ranked[:count]


def _best(candidates: np.ndarray, want: int, last_access: np.ndarray,
          next_use: np.ndarray | None) -> np.ndarray:
    """The first `want` of `candidates` (ascending ids) in `rank_evictions`' order, ties
    included exactly (all of them, ranked, when `want` covers them), found by partial
    selection instead of a sort of every candidate."""
    if want >= len(candidates) // 4:  # no gain over the full sort
        return _ranked(candidates, last_access, next_use)
    if next_use is None:
        return _ranked(np.sort(_smallest(candidates, last_access[candidates], want)), last_access,
                       None)
    later = -next_use[candidates].astype(np.float64)  # needed latest first
    edge = np.partition(later, want - 1)[want - 1]
    sure, tied = candidates[later < edge], candidates[later == edge]
    top = np.concatenate([sure, _smallest(tied, last_access[tied], want - len(sure))])
    return _ranked(np.sort(top), last_access, next_use)


def _smallest(ids: np.ndarray, keys: np.ndarray, count: int) -> np.ndarray:
    """The `count` ids of the smallest keys, equal keys taken in the order of `ids` (what a
    stable sort would take first)."""
    if count >= len(ids):
        return ids
    edge = np.partition(keys, count - 1)[count - 1]
    sure = ids[keys < edge]
    return np.concatenate([sure, ids[keys == edge][:count - len(sure)]])


def _ranked(ids: np.ndarray, last_access: np.ndarray, next_use: np.ndarray | None
            ) -> np.ndarray:
    if next_use is None:
        order = np.argsort(last_access[ids], kind="stable")
    else:
        # lexsort: last key is primary. Latest next use first, then coldest.
        order = np.lexsort((last_access[ids], -next_use[ids].astype(np.float64)))
    return ids[order].astype(np.int64)


def rank_evictions(*, resident: np.ndarray, evictable: np.ndarray, last_access: np.ndarray,
                   next_use: np.ndarray | None = None) -> np.ndarray:
    """The shards `choose_evictions` may take (resident and evictable), best victim first
    (int64 ids; its arguments mean the same)."""
    return _ranked(np.flatnonzero(resident & evictable), last_access, next_use)


def nothing_to_evict(detail: str) -> CacheFullError:
    """The error for an eviction that finds too little to evict (the reference's wording)."""
    return CacheFullError("Attempted shard eviction, but there are no shards present locally "
                          f"to evict. Your cache limit may be too low: {detail}")
