"""Under a cache limit, one worker lets go of its mappings of the shards its node evicted.

A deleted file's disk space is freed only once no process maps it. A worker that kept mapping
the shards it had read would let the cache's real footprint grow past `cache_limit` (to the
whole dataset, over an epoch) while the files the cache lists stay under it.

The worker looks at each shard change, when the node evicted anything since its last look (one
shared integer to compare). That is not enough on its own: a DataLoader worker spends the
training step waiting for its next batch to make (its generator suspended, or in torch's index
queue) while other workers go on evicting what it mapped. So a thread of the worker makes the
same check every `RELEASE_EVERY` seconds (`docs/runtime.md` has the disk's peak before and
after).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from streaming.format.reader import Reader

__all__ = ["RELEASE_EVERY", "HeldMappings"]

#: How often a worker's watcher thread checks for evictions while the worker may be waiting.
RELEASE_EVERY = 0.02


class HeldMappings:
    """The shards one worker process may map, and the release of those the node evicted.

    A mapping is stale once its shard was evicted after it was made, whether the shard is gone
    or was fetched again since (a new file, while the mapping holds the deleted one): the node's
    eviction count of the shard then differs from the one last seen. A shard once taken in
    stays held for the epoch (the worker may map it again whenever it reads it), so a shard
    evicted before the worker gets to it and then fetched by its read is still followed.

    Args:
        readers: every shard's reader (global shard id order).
        evictions: the node's per-shard eviction counts followed by their total (a view of
            shared memory in this process; `NodeCache.evictions`).
        mapped: shards whose readers may hold a mapping already, of files evicted since or not
            (an earlier epoch's): let go at the first look.
    """

    def __init__(self, readers: Sequence[Reader], evictions: np.ndarray,
                 mapped: Iterable[int] = ()) -> None:
        self._readers = readers
        self._evictions = evictions
        self._held = np.zeros(len(evictions) - 1, bool)
        self._seen = np.zeros(len(evictions) - 1, np.int64)  # eviction counts last seen
        earlier = np.fromiter(mapped, np.int64)
        self._held[earlier] = True
        self._seen[earlier] = -1  # unknown: stale
        self._looked = -1 if len(earlier) else int(evictions[-1])  # the total at the last look
        # Between the worker's thread (`add`, `release`) and the watcher (`release`): a count
        # taken in by `add` between a release's read and its write would be lost.
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None

    def add(self, shard: int) -> None:
        """The worker reads `shard` now (maps it); release the stale ones if the node evicted
        anything since the last look.

        A shard not held yet has its reader closed first: a mapping made outside an epoch
        (random access) may be of a file evicted since. Starts the watcher at the first call,
        so an iteration that never reads starts none.
        """
        with self._lock:
            if not self._held[shard]:
                self._readers[shard].close()
                self._held[shard] = True
                self._seen[shard] = self._evictions[shard]
        if self._evictions[-1] != self._looked:
            self.release()
        if self._stop is None:
            self._watch()

    def release(self) -> int:
        """Drop this process's stale mappings; return how many went."""
        with self._lock:
            self._looked = int(self._evictions[-1])  # first: one during the look is seen next
            held = np.flatnonzero(self._held)
            counts = self._evictions[held]
            changed = counts != self._seen[held]
            stale = held[changed]
            for shard in stale.tolist():
                # A read in flight keeps its own reference to the mapping; the next one maps
                # the file again (fetching it again first if it is still needed).
                self._readers[shard].close()
            self._seen[stale] = counts[changed]
        return len(stale)

    def stop(self) -> None:
        """Stop the watcher (the worker's epoch ended); a last look is the caller's."""
        if self._stop is not None:
            self._stop.set()
            self._stop = None

    def _watch(self) -> None:
        stop = self._stop = threading.Event()
        # The thread holds this object weakly: an iteration dropped without being finished
        # takes its watcher with it.
        threading.Thread(target=_watching, args=(weakref.ref(self), stop),
                         name="shardstream-release", daemon=True).start()


def _watching(ref: weakref.ref[HeldMappings], stop: threading.Event) -> None:
    while not stop.wait(RELEASE_EVERY):
        held = ref()
        if held is None:
            return
        if held._evictions[-1] != held._looked:
            held.release()
        del held
