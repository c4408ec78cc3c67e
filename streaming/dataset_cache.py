"""`CacheControls`: what a `StreamingDataset` lets its user do with the node's shard cache.

Thin, public delegations to `streaming.cache.node_cache.NodeCache` (the reference's
`prepare_shard`, `evict_shard`, `evict_coldest_shard`; ours: pinning and egress counters), and
the read of one sample that makes its shard local again when its file is gone or wrong; kept
apart from the dataset's construction, iteration and checkpoints.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.cache.reading_slot import holding
from streaming.errors import ShardSizeMismatchError
from streaming.stream import index_bytes

if TYPE_CHECKING:
    from streaming.cache.node_cache import NodeCache
    from streaming.format.shard_readers import ShardReaders
    from streaming.stream import Stream

__all__ = ["CacheControls"]


class CacheControls:
    """Mixed into `StreamingDataset`, which sets `_ss_cache` and `streams`."""

    _ss_cache: NodeCache
    streams: list[Stream]
    shards: ShardReaders

    def _read(self, shard_id: int, index: int, retry: int = 7) -> Any:
        """One sample of one shard, making the shard local first if its file is missing
        (evicted, deleted behind our back) or is not the file its index names (cut short)."""
        mismatched = False
        try:
            sample = self.shards[shard_id].get_item(index)  # the usual case: it is local
        except ShardSizeMismatchError:  # a truncated copy in the cache: made again at once
            cause, mismatched = "", True
        except FileNotFoundError as err:
            cause = str(err)  # the message only: a kept exception would tie this frame into a cycle
        else:
            self._ss_cache.touch(shard_id)
            return sample
        return self._recover(shard_id, index, cause, mismatched, retry)

    def _recover(self, shard_id: int, index: int, cause: str = "", mismatched: bool = False,
                 retry: int = 7) -> Any:
        """`_read` after its first attempt failed (`cause`: the missing file's error message;
        `mismatched`: the file there is not the indexed one): an epoch's reader that just met
        the error calls it directly, rather than opening the missing file a second time."""
        with holding(self._ss_cache, shard_id):  # not evicted between its fetch and its read
            return self._fetch_and_read(shard_id, index, retry, cause, mismatched)

    def _fetch_and_read(self, shard_id: int, index: int, retry: int, cause: str,
                        mismatched: bool) -> Any:
        waited = 0.0
        for attempt in range(1 + retry):
            self.shards[shard_id].close()
            start = time.perf_counter()
            self._ss_cache.prepare(shard_id, blocking=True, force=attempt > 0 or mismatched)
            waited += time.perf_counter() - start
            try:
                sample = self.shards[shard_id].get_item(index)
            except ShardSizeMismatchError:
                if mismatched:  # made again, still not the indexed file: no remote has it
                    raise
                mismatched = True
                continue
            except FileNotFoundError as err:
                cause = str(err)
                continue
            self._ss_cache.touch(shard_id)
            self._ss_cache.counters.add_many({"shard_waits": 1, "shard_wait_seconds": waited})
            return sample
        hint = ("This may be due to thrashing caused by `cache_limit` being set too low."
                if self._ss_cache.cache_limit else "Check if the shard file exists in your remote "
                "location or have you deleted the shard file from the local directory?")
        raise RuntimeError(f"{cause}. StreamingDataset repeatedly failed to download a shard. "
                           f"{hint}")

    def metrics(self) -> dict[str, Any]:
        """Where the time goes, summed over every process of this node that reads this
        dataset (its DataLoader workers and the other ranks): a plain dict of counters, seconds
        and bytes with a few rates; keys and units in `docs/metrics.md`."""
        return self._ss_cache.metrics_snapshot()

    @property
    def egress(self) -> dict[str, Any]:
        """Bytes and seconds this node spent downloading shards (network egress)."""
        return self._ss_cache.egress()

    def prepare_shard(self, shard_id: int, blocking: bool = True) -> None:
        """Make a shard local (fetching it once per node); see `NodeCache.prepare`."""
        self._ss_cache.prepare(shard_id, blocking=blocking)

    def pin_shards(self, shard_ids: Sequence[int] | np.ndarray, fetch: bool = True) -> None:
        """Keep these shards resident under `cache_limit` (for every process of the node).

        Pinned shards are never evicted; with `fetch`, those not yet local are fetched now. Use
        it for shards read at the start of every epoch or by evaluation in between.

        Raises:
            ValueError: an id is out of range, or the pinned shards would not fit the limit.
        """
        self._ss_cache.pin(shard_ids, index_bytes(self.streams), fetch=fetch)

    def unpin_shards(self, shard_ids: Sequence[int] | np.ndarray) -> None:
        """Let pinned shards be evicted again."""
        self._ss_cache.unpin(shard_ids)

    def evict_shard(self, shard_id: int) -> None:
        """Delete a shard's files from the cache now (fetched again when next needed).

        Raises:
            ValueError: the id is out of range, or the shard's stream has no remote: its files
                are the only copy of its samples (the reference deletes them).
        """
        self._ss_cache.evict_on_request(shard_id)

    def evict_coldest_shard(self) -> None:
        """Evict the shard the cache would evict next: never a pinned shard, one in use, or
        one whose only copy is local (the reference takes the coldest cached shard, whatever
        it is).

        Raises:
            ValueError: no shard qualifies (`CacheFullError`).
        """
        self._ss_cache.evict_coldest()
