"""Yield one worker's samples while a background thread prepares the shards ahead of it.

The consumer never waits for a shard the prefetcher could have fetched earlier, the prefetcher
never runs more than `predownload` samples ahead, and either side stops promptly: an abandoned
iterator (or interpreter exit) never hangs. A failed prefetch is only logged: the consumer fetches
that shard itself when it gets there and raises the real error if it persists.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["first_uses", "iterate_with_prefetch"]

_POLL_SECONDS = 0.002

log = logging.getLogger(__name__)


def first_uses(shard_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shards in the order a sequence first needs them, with the position of that first need."""
    if not len(shard_ids):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    shards, first = np.unique(shard_ids, return_index=True)
    order = np.argsort(first, kind="stable")
    return shards[order].astype(np.int64), first[order].astype(np.int64)


class _Prefetcher:
    """Background thread preparing shards in first-use order within a sliding window."""

    def __init__(self, shards: np.ndarray, positions: np.ndarray,
                 prepare: Callable[[int], Any], window: int) -> None:
        self.shards, self.positions = shards, positions
        self.prepare, self.window = prepare, max(int(window), 1)
        self.consumed = 0  # written by the consumer, read here; a plain int is atomic enough
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="shardstream-prefetch",
                                       daemon=True)

    def _run(self) -> None:
        for shard, position in zip(self.shards.tolist(), self.positions.tolist()):
            while position > self.consumed + self.window:
                if self.stop.wait(_POLL_SECONDS):
                    return
            if self.stop.is_set():
                return
            try:
                self.prepare(shard)
            except Exception as err:  # the consumer retries this shard itself when it needs it
                log.warning("Prefetching shard %d failed (%s: %s); it will be fetched when "
                            "needed.", shard, type(err).__name__, err)


def iterate_with_prefetch(
    sample_ids: np.ndarray,
    shard_ids: np.ndarray,
    read: Callable[[int], Any],
    prepare: Callable[[int], Any],
    predownload: int,
) -> Iterator[Any]:
    """Yield `read(i)` for each position i of `sample_ids`, prefetching shards ahead.

    Args:
        sample_ids: the worker's sample ids in yield order (padding already removed).
        shard_ids: the shard of each sample (same length).
        read: returns the sample at a position; it prepares the shard itself if it is missing
            (so a failed or slow prefetch costs time, never correctness).
        prepare: non-blocking best-effort preparation of one shard, run in the background.
        predownload: how many samples ahead of the consumer the prefetcher may work.
    """
    shards, positions = first_uses(shard_ids)
    prefetcher = _Prefetcher(shards, positions, prepare, predownload)
    prefetcher.thread.start()
    try:
        for position in range(len(sample_ids)):
            prefetcher.consumed = position
            yield read(position)
    finally:
        prefetcher.stop.set()
        # Join only when it is quick: a prepare in flight may take a while, and the thread is a
        # daemon that checks `stop` before its next step.
        prefetcher.thread.join(timeout=0.05)
