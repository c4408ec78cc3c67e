"""A process-wide bound on the decoded row groups kept by Parquet readers.

A reader keeps the row groups it decoded while its shard is open, so that a shuffled pass over
a shard decodes each group once. Shards stay open for as long as the mapping registry allows
(thousands), so without a bound a process would end up holding the whole dataset decoded. Here
the groups of every reader share one budget of Arrow bytes (`STREAMING_PARQUET_DECODED_BYTES`,
default 512 MiB): past it, the groups used least recently are forgotten (the most recent one is
always kept) and decoded again if read again. When that happens often (a shuffle block spans
more decoded rows than the budget holds, so nearly every sample decodes a whole group again,
100x slower), a warning says so once per process, with what to change.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import OrderedDict
from typing import Any

__all__ = ["BUDGET_ENV", "DecodedGroups", "decoded_budget"]

BUDGET_ENV = "STREAMING_PARQUET_DECODED_BYTES"
_DEFAULT = 512 << 20
_REMEMBER = 4096  # forgotten groups remembered, to notice one decoded again
_WARN_AFTER = 256  # decodes again before the warning (and at least 1 in 10 decodes)

log = logging.getLogger(__name__)


class DecodedGroups(dict[int, Any]):
    """One open shard's decoded row groups (position -> columns), registered in the budget."""


class _Budget:
    def __init__(self) -> None:
        # Re-entrant: a weakref callback (a shard's groups dying) may run inside `add`.
        self._lock = threading.RLock()
        self._order: OrderedDict[tuple[int, int], tuple[weakref.ref[Any], int]] = OrderedDict()
        self.used = 0
        self._limit: int | None = None
        self._forgotten: OrderedDict[tuple[int, int], None] = OrderedDict()
        self.decodes = self.redecodes = 0
        self._warned = False
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = threading.RLock()

    @property
    def limit(self) -> int:
        if self._limit is None:
            self._limit = int(os.environ.get(BUDGET_ENV, _DEFAULT))
        return self._limit

    def add(self, groups: DecodedGroups, which: int, columns: Any, nbytes: int) -> None:
        """Keep `columns` as group `which` of `groups`, forgetting the least recently used
        groups (of any shard) past the budget."""
        victims = []
        with self._lock:
            groups[which] = columns
            key = (id(groups), which)
            self._count(key)
            self._order[key] = (weakref.ref(groups, self._dead(id(groups))), nbytes)
            self._order.move_to_end(key)
            self.used += nbytes
            while self.used > self.limit and len(self._order) > 1:
                (gid, gone), (ref, size) = self._order.popitem(last=False)
                self.used -= size
                victims.append((ref, gone))
                self._forgotten[(gid, gone)] = None
                if len(self._forgotten) > _REMEMBER:
                    self._forgotten.popitem(last=False)
        for ref, gone in victims:
            owner = ref()
            if owner is not None:
                owner.pop(gone, None)

    def _count(self, key: tuple[int, int]) -> None:
        """Count a decode, and warn once when groups are decoded again too often."""
        self.decodes += 1
        if self._forgotten.pop(key, 0) is None:
            self.redecodes += 1
            if (not self._warned and self.redecodes >= _WARN_AFTER
                    and 10 * self.redecodes >= self.decodes):
                self._warned = True
                log.warning(
                    "Parquet row groups are decoded again and again (%d of %d decodes): the "
                    "samples read close together (a shuffle block) span more decoded data than "
                    "the decode budget of %d MiB holds, so reads run far slower. Raise %s, or "
                    "lower shuffle_block_size, or write smaller row groups (docs/parquet.md).",
                    self.redecodes, self.decodes, self.limit >> 20, BUDGET_ENV)

    def _dead(self, gid: int) -> Any:
        def forget(_: Any) -> None:  # a closed shard's groups: their bytes are free again
            with self._lock:
                for key in [k for k in self._order if k[0] == gid]:
                    self.used -= self._order.pop(key)[1]
                for key in [k for k in self._forgotten if k[0] == gid]:  # the id may be reused
                    del self._forgotten[key]
        return forget

    def touch(self, groups: DecodedGroups, which: int) -> None:
        """Mark group `which` of `groups` as just used."""
        with self._lock:
            key = (id(groups), which)
            if key in self._order:
                self._order.move_to_end(key)


decoded_budget = _Budget()
