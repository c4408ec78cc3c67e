"""The readers of a simulated epoch: one per DataLoader worker (or per rank without workers).

Everything a reader will need is derived from the real plan up front, vectorised: its shards in
read order, the order its prefetcher meets them (`first_uses`, as `streaming.prefetch` walks
them), and for every batch how many of those it needs local before it can be read. The event
loop then only moves pointers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from streaming.prefetch import LinkSizer, first_uses

__all__ = ["Reader", "ShardLocator", "build_readers", "take_order"]

#: Most entries of a locator's table (int64): 128 MiB.
_TABLE = 1 << 24


class ShardLocator:
    """Global sample id -> shard id, as `np.searchsorted(offsets, ids, "right") - 1`, faster.

    A table gives the shard of every `2**bits`-th id, with `2**bits` at most the smallest
    non-empty shard, so an id is at most one non-empty shard past its table entry: one lookup,
    then a step forward while the next shard starts at or before it (empty shards included).
    A binary search per id costs several times more on the 10^8 ids of a big plan. Falls back to
    the search when the table would be too big (very small shards).
    """

    def __init__(self, offsets: np.ndarray, total: int) -> None:
        self.offsets = np.asarray(offsets, np.int64)
        sizes = np.diff(np.append(self.offsets, total))
        positive = sizes[sizes > 0]
        smallest = int(positive.min()) if len(positive) else 1
        self.bits = max(smallest.bit_length() - 1, 0)
        self.table: np.ndarray | None = None
        if (total >> self.bits) + 1 <= _TABLE:
            starts = np.arange(0, total + 1, 1 << self.bits, dtype=np.int64)
            self.table = np.searchsorted(self.offsets, starts, "right") - 1
        self.bounds = np.append(self.offsets, np.iinfo(np.int64).max)

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        if self.table is None:
            return np.searchsorted(self.offsets, ids, "right") - 1
        shards = self.table[ids >> self.bits]
        ahead = self.bounds[shards + 1] <= ids
        while ahead.any():  # past a shard boundary (and any empty shards after it)
            shards += ahead
            ahead = self.bounds[shards + 1] <= ids
        return shards


@dataclass(eq=False)
class Reader:
    """One reader's plan and its state during the epoch."""

    node: int
    rank: int  # global rank
    slot: int  # reader index within its node
    shards: np.ndarray  # shard of each of its samples, in read order (padding dropped)
    order: np.ndarray  # its shards in first-use order (the prefetcher's walk)
    first: np.ndarray  # position of each one's first use
    need: np.ndarray  # per batch: how many of `order` must be local to read it
    batch_size: int
    sizer: LinkSizer
    steps: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # batch -> step
    batch: int = 0  # next batch to read
    dispatched: int = 0  # batches the loader asked for so far
    busy: bool = False  # decoding a batch
    waiting: bool = False  # waiting for a shard
    ready: int = 0  # leading entries of `order` known to be local
    walked: int = 0  # entries of `order` the prefetcher took
    active: int = 0  # prefetches in flight
    count: int = 1  # prefetches it may run at once (the sizer's choice)
    waited: bool = False  # the prefetcher waited for the reads since the sizer's last step
    seen_bytes: int = 0  # the node's fetched bytes at the sizer's last step
    consumed: int = 0  # position of the batch being read (the prefetcher's window base)
    progress: int = -1  # position for the eviction clock (-1: not reading)
    in_use: int = -1  # the shard it reads or waits for (never evicted meanwhile)
    pending: np.ndarray | None = None  # the current batch's shards in read order (with a limit)
    cursor: int = 0  # how many of `pending` it has read

    @property
    def batches(self) -> int:
        return len(self.need)

    def batch_range(self, batch: int) -> tuple[int, int]:
        begin = batch * self.batch_size
        return begin, min(begin + self.batch_size, len(self.shards))


def build_readers(node: int, node_ids: np.ndarray, locate: ShardLocator, num_shards: int,
                  batch_size: int, ranks_per_node: int, max_fetches: int) -> list[Reader]:
    """The readers of one node from its plan rows `(ranks, readers per rank, ...)`."""
    rows = node_ids.reshape(node_ids.shape[0] * node_ids.shape[1], -1)
    per_rank = rows.shape[0] // ranks_per_node
    readers = []
    rank_of = np.empty(num_shards, np.int64)
    for slot, row in enumerate(rows):
        ids = row[row >= 0]
        shards = locate(ids)
        order, first = first_uses(shards)
        rank_of[order] = np.arange(len(order))
        batches = -(-len(ids) // batch_size)
        if len(ids):
            reach = np.maximum.accumulate(rank_of[shards])
            ends = np.minimum(np.arange(1, batches + 1) * batch_size, len(ids)) - 1
            need = reach[ends] + 1
        else:
            need = np.empty(0, np.int64)
        readers.append(Reader(node, node * ranks_per_node + slot // per_rank, slot, shards,
                              order, first, need, batch_size, LinkSizer(most=max_fetches)))
    return readers


def take_order(readers: list[Reader]) -> tuple[list[Reader], np.ndarray]:
    """The batches of one rank's readers in the order its DataLoader yields them.

    Round robin over the workers, skipping those that ran out (as torch's loader does); sets
    every reader's `steps` (its batch -> the rank's step) and returns, per step, the reader and
    its batch.
    """
    counts = np.array([r.batches for r in readers], np.int64)
    batch = np.concatenate([np.arange(c) for c in counts] or [np.empty(0, np.int64)])
    who = np.repeat(np.arange(len(readers)), counts)
    order = np.lexsort((who, batch))
    steps = np.empty(len(order), np.int64)
    steps[order] = np.arange(len(order))
    start = 0
    for reader, count in zip(readers, counts.tolist()):
        reader.steps = steps[start:start + count]
        start += count
    return [readers[i] for i in who[order].tolist()], batch[order]
