"""How one worker reads its shards during an epoch: readers, node-cache bookkeeping, recovery.

`EpochReads` is what the epoch loops of `streaming.iteration` call for every shard they touch:
per-sample and bulk reads (`read_one`, `read_run`, `read_columns`), reads from the remote while
a shard is still on its way (`early_samples`), a shard fetched again when its file went missing,
and a cached copy dropped when its bytes do not decode.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.cache.early_reads import remote_samples
from streaming.cache.held_mappings import HeldMappings
from streaming.errors import ShardFormatError, StreamingError
from streaming.prefetch import Prefetcher, Prefetchers

if TYPE_CHECKING:
    from streaming.cache.node_cache import NodeCache
    from streaming.format.reader import Reader

__all__ = ["EpochReads", "Locate"]

log = logging.getLogger(__name__)

_END = object()  # `next`'s default: the run had one sample

Locate = Callable[[np.ndarray], "tuple[np.ndarray, np.ndarray]"]


class EpochReads:
    """How one worker reads: its shard readers, its slots in the node cache, its recovery path.

    Build it in the worker process (inside `__iter__`): it keeps that process's views of the
    shared in-use and access-time arrays, so per-shard bookkeeping is one array store.

    Args:
        readers: every shard's reader (global shard id order).
        cache: the node cache (in-use slots, access times, background preparation).
        locate: global sample ids -> (shard ids, indices within shard), vectorised.
        slot: this worker's in-use slot on the node.
        recover: reads one sample after its shard's file went missing, given the error's
            message (fetches it again with retries; raises the user-facing error when that
            keeps failing).
        get_item: a subclass's per-sample reader, called with the global sample id instead of
            the readers when set (it may transform samples, so no bulk path then).
        early_limit: how many samples at the start of an epoch may be read straight from the
            remote while their shards are still being fetched (the first batch: see
            `streaming.cache.early_reads`); 0 for none.
        background: where this worker's running prefetchers are kept, for the dataset's
            `close()` to stop them; or None.
    """

    def __init__(self, readers: Sequence[Reader], cache: NodeCache, locate: Locate, slot: int,
                 recover: Callable[[int, int, str], Any],
                 get_item: Callable[[int], Any] | None = None, early_limit: int = 0,
                 background: Prefetchers | None = None) -> None:
        self.readers = readers
        self.background = background
        self.cache = cache
        self.locate = locate
        self.recover = recover
        self.get_item = get_item
        reading = cache.reading_slot(slot)
        self.enter: Callable[[int, int], None] = reading.enter
        self.leave: Callable[[], None] = reading.leave
        self.stamp = reading.stamp
        self.counters = cache.counters  # this worker's row of the node's runtime counters
        # Samples at the start of the epoch that may be read from the remote before their
        # shard lands (`early_prefix`); 0 turns that off.
        self.early_limit = 0 if get_item is not None else early_limit
        # Under a cache limit: the shards this process may map (read now, or in an earlier
        # epoch), whose mappings go once they are evicted.
        self._held: HeldMappings | None = None
        if cache.cache_limit is not None:
            built = getattr(readers, "built_ids", None)
            self._held = HeldMappings(readers, cache.evictions.numpy(),
                                      built() if built is not None else ())
            self.enter = self._entering(reading.enter, self._held)
            self.leave = self._leaving(reading.leave, self._held)

    def watch(self, prefetcher: Prefetcher) -> None:
        """Keep a started prefetcher where its dataset's `close()` can stop it."""
        if self.background is not None:
            self.background.add(prefetcher)

    def settled(self, shard: int) -> bool:
        """Whether `shard` is local and stays so until it is read (no cache limit that could
        evict it meanwhile): preparing it ahead would do nothing, so the prefetcher need not
        wait for the consumer to get near it."""
        return self.cache.cache_limit is None and self.cache.is_local(shard)

    def all_settled(self) -> bool:
        """Whether every shard of the node is `settled`: a warm cache with no limit, where a
        prefetcher would only walk the epoch's shards and pass each over."""
        return self.cache.cache_limit is None and self.cache.all_local()

    def claim(self, shard: int) -> bool:
        """Claim `shard` for a preparation the prefetcher runs next (`prepare_claimed`; see
        `NodeCache.claim_ahead`)."""
        return self.cache.claim_ahead(shard)

    def prepare_claimed(self, shard: int) -> None:
        self.cache.prepare_claimed(shard)

    def release(self, shard: int) -> None:
        self.cache.release_claim(shard)

    def count_fetches(self, count: int) -> None:
        """The prefetcher's concurrency, kept as the counters' level (the largest seen)."""
        self.counters.raise_to("prefetch_concurrency", count)

    def fetched_bytes(self) -> int:
        """Bytes the node fetched so far (what the prefetcher's sizer measures)."""
        return int(self.cache.egress()["bytes"])

    def restore_missing(self, shard_ids: np.ndarray) -> None:
        """Fetch again the shards of a finished chunk whose files were deleted behind our back.

        Reads go on from the mapping (a deleted file stays mapped), so nothing else would notice;
        this keeps the cache directory what its accounting says it is. One `stat` per distinct
        shard per chunk.
        """
        distinct = np.unique(shard_ids).tolist()
        for shard in distinct:
            if self.cache.is_local(shard) and not self.cache.raw_present(shard):
                self.readers[shard].close()
                self.cache.prepare(shard, blocking=True, force=True)
        if self._held is not None:
            self._held.release()

    @staticmethod
    def _entering(enter: Callable[[int, int], None], held: HeldMappings
                  ) -> Callable[[int, int], None]:
        """`enter` (a shard change), also remembering the shard as mapped here (which lets go
        of the mappings of shards evicted since, if the node evicted any; see `HeldMappings`)."""
        def entering(shard: int, position: int) -> None:
            enter(shard, position)
            held.add(shard)
        return entering

    @staticmethod
    def _leaving(leave: Callable[[], None], held: HeldMappings) -> Callable[[], None]:
        """`leave` (the end of this process's epoch), then a last look for evicted shards."""
        def leaving() -> None:
            leave()
            held.stop()
            held.release()
        return leaving

    def early_samples(self, shard: int, indices: np.ndarray) -> list[Any] | None:
        """Samples `indices` of `shard` read from the remote while the shard is not local
        yet, or None: it is local, cannot be read so, or the remote failed (then the normal
        path waits for the shard and raises the real error)."""
        if self.cache.is_local(shard):
            return None
        source = self.cache.sources[int(self.cache.info.stream_ids[shard])]()
        try:
            got = remote_samples(self.readers[shard], source, indices)
        except (StreamingError, OSError, ValueError, struct.error) as err:
            log.debug("early read of shard %d failed, waiting for it instead: %s", shard, err)
            return None
        if got is None:
            return None
        self.counters.add_many({"early_samples": len(got.samples), "early_bytes": got.nbytes})
        return got.samples

    def read_one(self, shard: int, index: int) -> Any:
        try:
            return self.readers[shard].get_item(index)
        except FileNotFoundError as err:
            cause = str(err)  # recovered outside the handler: no chained error or frame kept
        except ShardFormatError:
            self.discard_bad_copy(shard)
            raise
        return self.recover(shard, index, cause)

    def read_first(self, shard: int, index: int) -> Any:
        """`read_one` for the first sample read from `shard` in a while (a shard change): a
        shard that is neither mapped here nor local on the node (the prefetch thread is still
        fetching it, as it mostly is when shards are small) is waited for at once, not opened
        and found missing first."""
        if self.readers[shard].mapped or self.cache.is_local(shard):
            return self.read_one(shard, index)
        return self.recover(shard, index, f"Shard {shard} is not in the cache")

    def discard_bad_copy(self, shard: int) -> None:
        """After `shard`'s bytes failed to decode: delete the node cache's copy when a remote
        has the shard, so a later run fetches it again (once the remote is repaired) rather than
        failing on the same cached bytes forever. A local-only shard is the data itself: kept."""
        if not self.cache.info.has_remote[shard]:
            return
        log.warning("Shard %d does not decode: deleting its cached copy, to be fetched again "
                    "by the next run.", shard)
        self.readers[shard].close()
        self.cache.evict(shard)

    def read_columns(self, shard: int, indices: np.ndarray) -> dict[str, Any] | None:
        """Samples `indices` of `shard` as columns (see `MDSReader.read_columns`), or None
        when the shard cannot give columns (JSONL and CSV shards)."""
        read = getattr(self.readers[shard], "read_columns", None)
        if read is None:
            return None
        try:
            return read(indices)
        except FileNotFoundError as err:  # fetched again (with retries) by the one-sample path
            cause = str(err)
        except ShardFormatError:
            self.discard_bad_copy(shard)
            raise
        self.recover(shard, int(indices[0]), cause)
        return read(indices)

    def read_run(self, shard: int, start: int, stop: int) -> Iterator[Any]:
        """Samples `start..stop-1` of `shard`, decoded in bulk.

        Only mapping the shard can fail (a missing file); it happens on the first read, which
        takes the recovery path. The bulk read then reuses the mapping, which outlives deletion.
        """
        first = self.read_first(shard, start)
        rest = self.readers[shard].iter_range(start + 1, stop)
        # Started now, while the file the first read found is mapped: the run then holds that
        # mapping, so the shard being evicted meanwhile (`evict_shard` between two samples)
        # cannot take the rest of the run away.
        second = next(rest, _END)
        return chain((first,), rest) if second is _END else chain((first, second), rest)
