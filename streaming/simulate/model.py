"""The discrete-event model of an epoch: downloads over each node's link, the node cache, the
workers' reads and the synchronous training step.

Per node, readers (DataLoader workers) prefetch their shards in first-use order at most
`predownload` samples ahead, as many at once as `LinkSizer` lets them (the runtime's class, fed
simulated time), skipping shards another reader of the node already has or is fetching. A reader
reads its next batch once the loader asked for it (`prefetch_factor` batches ahead of the step)
and every shard it needs is local, fetching itself what is missing; reading takes
`decode_seconds_per_sample` per sample. Every rank of every node takes its batch of step k
together (training is synchronous), then trains for `step_seconds_per_sample` per sample.
Cache decisions are `SimNodeCache`'s, that is, the runtime's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from streaming.cache.eviction import CacheFullError
from streaming.errors import StreamingError
from streaming.order.next_use import UseSchedule
from streaming.simulate.config import SimConfig
from streaming.simulate.events import Clock
from streaming.simulate.link import Link
from streaming.simulate.node_cache import FETCHING, LOCAL, REMOTE, SimNodeCache
from streaming.simulate.readers import Reader, ShardLocator, build_readers, take_order

__all__ = ["Model", "NodeState", "SimulationError"]


class SimulationError(StreamingError, ValueError):
    """The simulated run cannot proceed (e.g. a cache that cannot hold what a read needs)."""


@dataclass(eq=False)
class NodeState:
    """One node: its link, its cache, and what it did (kept across epochs)."""

    node: int
    link: Link
    cache: SimNodeCache
    fetch_bytes: int = 0
    fetches: int = 0
    readers: list[Reader] = field(default_factory=list)
    waiters: dict[int, list[Reader]] = field(default_factory=lambda: defaultdict(list))
    room_waiters: list[Reader] = field(default_factory=list)  # reads waiting for cache room
    cache_times: list[float] = field(default_factory=list)
    cache_usage: list[int] = field(default_factory=list)

    def hold(self, reader: Reader, shard: int) -> None:
        """`reader` now reads `shard` (-1: none), which the cache must not evict meanwhile."""
        holding = self.cache.holding
        if reader.in_use >= 0:
            holding[reader.in_use] -= 1
        reader.in_use = shard
        if shard >= 0:
            holding[shard] += 1

    def progress(self) -> int:
        reading = [r.progress for r in self.readers if r.progress >= 0]
        return min(reading) if reading else 0

    def note_usage(self, now: float) -> None:
        self.cache_times.append(now)
        self.cache_usage.append(self.cache.usage)


class Model:
    """The simulated job; `run_epoch` runs one epoch's plan from the current time."""

    def __init__(self, config: SimConfig, fetch_bytes: np.ndarray, resident_bytes: np.ndarray,
                 cache_bytes: np.ndarray, index_bytes: int, total_samples: int,
                 meta_fetch_bytes: np.ndarray | None = None) -> None:
        self.config = config
        self.total_samples = total_samples  # samples in all shards (the ids' range)
        self.clock = Clock()
        self.fetch_sizes = fetch_bytes
        # A shard with a separate metadata file is two requests in turn (`prepare_shard_files`).
        self.meta_sizes = (np.zeros_like(fetch_bytes) if meta_fetch_bytes is None
                           else meta_fetch_bytes)
        self.num_shards = len(fetch_bytes)
        self._marks = np.zeros(self.num_shards, bool)  # scratch for a batch's distinct shards
        self.future = config.cache_limit is not None
        self.nodes = [NodeState(n, Link(self.clock, config.bandwidth, config.latency),
                                SimNodeCache(cache_bytes, resident_bytes, index_bytes,
                                             config.cache_limit))
                      for n in range(config.nodes)]
        for state in self.nodes:
            state.cache.progress = state.progress
        # Per step of the current epoch: when it started, and the samples each node took.
        self.step_starts: list[np.ndarray] = []
        self.step_samples: list[np.ndarray] = []
        self.on_step: Callable[[int], None] | None = None  # told each step's samples (progress)
        self._step_totals = np.zeros(0, np.int64)
        self.first_batch: list[float] = []
        self.stall_seconds = 0.0

    # ------------------------------------------------------------------------------- epochs

    def run_epoch(self, node_plans: list[np.ndarray], shard_offsets: np.ndarray,
                  later: Callable[[int], np.ndarray | None]) -> None:
        """Simulate one epoch.

        Args:
            node_plans: per node, its plan `(ranks, readers per rank, batches, batch size)`.
            shard_offsets: first global sample id of every shard.
            later: node -> the next epoch's rows of that node (for eviction's look-ahead), or
                None when there is no next epoch to plan.
        """
        cfg = self.config
        ranks: list[tuple[list[Reader], np.ndarray]] = []
        self._locate = ShardLocator(shard_offsets, self.total_samples)
        for state, node_ids in zip(self.nodes, node_plans):
            state.readers = build_readers(state.node, node_ids, self._locate, self.num_shards,
                                          cfg.batch_size, cfg.ranks_per_node, cfg.max_fetches)
            per_rank = cfg.readers_per_rank
            for r in range(cfg.ranks_per_node):
                ranks.append(take_order(state.readers[r * per_rank:(r + 1) * per_rank]))
            length = node_ids.shape[-2] * node_ids.shape[-1]

            def schedule(readers: list[Reader] = state.readers, length: int = length
                         ) -> UseSchedule:
                # The readers' shards are the plan rows located, padding (at the end) dropped.
                rows = np.full((len(readers), length), -1, np.int64)
                for row, reader in zip(rows, readers):
                    row[:len(reader.shards)] = reader.shards
                return UseSchedule.build(rows, self.num_shards)

            def look_ahead(node: int = state.node) -> UseSchedule | None:
                rows_after = later(node)
                return None if rows_after is None else self._schedule(rows_after)

            if self.future:
                state.cache.new_epoch(schedule, length, look_ahead)
        self._ranks = ranks
        self._dispatched = [0] * len(ranks)
        steps = max((len(order) for order, _ in ranks), default=0)
        self._ready = np.zeros(steps, np.int64)
        self._needed = np.zeros(steps, np.int64)
        samples = np.zeros((steps, cfg.nodes), np.int64)
        largest = np.zeros(steps, np.int64)
        for order, _ in ranks:
            self._needed[:len(order)] += 1
            sizes = np.zeros(len(order), np.int64)
            for reader in dict.fromkeys(order):
                begins = np.arange(reader.batches) * cfg.batch_size
                sizes[reader.steps] = np.minimum(cfg.batch_size, len(reader.shards) - begins)
            if len(order):
                samples[:len(order), order[0].node] += sizes
                largest[:len(order)] = np.maximum(largest[:len(order)], sizes)
        self._largest = largest
        self._step_totals = samples.sum(axis=1)
        self._starts = np.full(steps, np.nan)
        self._next_step, self._stepping = 0, False
        self._last_end = self.clock.now + cfg.startup_seconds
        self.clock.at(self._last_end, self._launch)
        self.clock.run()
        if self._next_step < steps:
            raise SimulationError(f"The simulated epoch stopped at step {self._next_step} of "
                                  f"{steps}: a reader waits for a shard that is never fetched.")
        self.step_starts.append(self._starts)
        self.step_samples.append(samples)
        self.first_batch.append(float(self._starts[0]) if steps else self.clock.now)

    def _schedule(self, rows: np.ndarray) -> UseSchedule:
        shards = np.full(rows.shape, -1, np.int64)
        used = rows >= 0
        shards[used] = self._locate(rows[used])
        return UseSchedule.build(shards, self.num_shards)

    # ------------------------------------------------------------------------------- loader

    def _launch(self) -> None:
        first = self.config.prefetch_factor * self.config.workers if self.config.workers else 1
        for state in self.nodes:
            for reader in state.readers:
                reader.seen_bytes = state.fetch_bytes
                self._pump(state, reader)
        for rank in range(len(self._ranks)):
            self._dispatch(rank, first)

    def _dispatch(self, rank: int, upto: int) -> None:
        """The loader asks rank `rank`'s readers for its first `upto` batches."""
        order, batch = self._ranks[rank]
        for step in range(self._dispatched[rank], min(upto, len(order))):
            reader = order[step]
            reader.dispatched = int(batch[step]) + 1
            self._try_read(self.nodes[reader.node], reader)
        self._dispatched[rank] = max(self._dispatched[rank], min(upto, len(order)))

    def _maybe_step(self) -> None:
        k = self._next_step
        if self._stepping or k >= len(self._ready) or self._ready[k] < self._needed[k]:
            return
        now = self.clock.now
        self._stepping = True
        self._starts[k] = now
        self.stall_seconds += now - self._last_end
        if self.config.workers:
            for rank in range(len(self._ranks)):
                self._dispatch(rank, k + 1 + self.config.prefetch_factor * self.config.workers)
        seconds = self.config.step_seconds_per_sample * int(self._largest[k])
        self.clock.at(now + seconds, self._step_done, k)

    def _step_done(self, k: int) -> None:
        if self.on_step is not None:
            self.on_step(int(self._step_totals[k]))
        self._stepping = False
        self._next_step = k + 1
        self._last_end = self.clock.now
        if not self.config.workers:
            for rank in range(len(self._ranks)):
                self._dispatch(rank, k + 2)
        self._maybe_step()

    # ------------------------------------------------------------------------------- readers

    def _try_read(self, state: NodeState, reader: Reader) -> None:
        if reader.busy or reader.batch >= reader.dispatched or reader.batch >= reader.batches:
            return
        cache, now = state.cache, self.clock.now
        begin, end = reader.batch_range(reader.batch)
        reader.consumed = reader.progress = begin
        self._pump(state, reader)
        if self.future:  # shard by shard in id order, as `_read_batch`: each local when read
            if reader.pending is None:
                # Distinct shards in id order without sorting: mark them, list the marks.
                batch = reader.shards[begin:end]
                self._marks[batch] = True
                reader.pending, reader.cursor = np.flatnonzero(self._marks), 0
                self._marks[batch] = False
            rest = reader.pending[reader.cursor:]
            absent = np.flatnonzero(cache.state[rest] != LOCAL)
            read = int(absent[0]) if len(absent) else len(rest)  # local ones: read now
            if read:
                cache.last_access[rest[:read]] = now
                state.hold(reader, int(rest[read - 1]))
                reader.cursor += read
            missing = rest[read:read + 1]
        else:
            need, order, states = int(reader.need[reader.batch]), reader.order, cache.state
            while reader.ready < need and states[order[reader.ready]] == LOCAL:
                reader.ready += 1
            missing = order[reader.ready:reader.ready + 1] if reader.ready < need else order[:0]
        if len(missing):
            shard = int(missing[0])
            state.hold(reader, shard)
            if not reader.waiting or reader not in state.waiters[shard]:
                state.waiters[shard].append(reader)
            reader.waiting = True
            if cache.state[shard] == REMOTE:
                self._demand(state, reader, shard)
            return
        reader.waiting, reader.busy, reader.pending = False, True, None
        self.clock.at(now + (end - begin) * self.config.decode_seconds_per_sample,
                      self._batch_read, state, reader)

    def _batch_read(self, state: NodeState, reader: Reader) -> None:
        begin, end = reader.batch_range(reader.batch)
        reader.busy = False
        step = int(reader.steps[reader.batch])
        reader.batch += 1
        if reader.batch >= reader.batches:
            reader.progress = -1
            state.hold(reader, -1)
        self._ready[step] += 1
        if step == self._next_step:
            self._maybe_step()
        self._try_read(state, reader)

    # ------------------------------------------------------------------------------- fetches

    def _pump(self, state: NodeState, reader: Reader) -> None:
        """The reader's prefetcher takes shards while it has free slots and the window allows."""
        cache, window = state.cache, self.config.window
        order, first = reader.order, reader.first
        while reader.active < reader.count and reader.walked < len(order):
            if first[reader.walked] > reader.consumed + window:
                reader.waited = True
                return
            shard = int(order[reader.walked])
            reader.walked += 1
            if cache.state[shard] == REMOTE and cache.reserve(shard, True):
                state.note_usage(self.clock.now)
                reader.active += 1
                self._start(state, shard, reader)
            else:  # local, in flight elsewhere, or put off: the prepare returns at once
                self._sized(state, reader)

    def _sized(self, state: NodeState, reader: Reader) -> None:
        moved, reader.seen_bytes = state.fetch_bytes - reader.seen_bytes, state.fetch_bytes
        reader.count = reader.sizer.fetched(moved, self.clock.now, behind=not reader.waited)
        reader.waited = False

    def _demand(self, state: NodeState, reader: Reader, shard: int) -> None:
        """A read that cannot wait for the prefetcher fetches `shard` itself; when the room is
        held by fetches in flight, it waits for one of them to finish and tries again."""
        try:
            state.cache.reserve(shard, False)
        except CacheFullError as err:
            if (state.cache.state == FETCHING).any():
                state.room_waiters.append(reader)
                return
            raise SimulationError(
                f"Node {state.node} cannot make room for shard {shard} "
                f"({int(state.cache.cache_bytes[shard])} bytes) at t={self.clock.now:.3f} s: "
                f"every cached shard is in use. Raise `cache_limit` (now "
                f"{self.config.cache_limit} bytes) or use fewer readers per node.") from err
        state.note_usage(self.clock.now)
        self._start(state, shard, None)

    def _start(self, state: NodeState, shard: int, prefetcher: Reader | None) -> None:
        meta = int(self.meta_sizes[shard])

        def data() -> None:
            state.link.fetch(int(self.fetch_sizes[shard]) - meta,
                             lambda: self._fetched(state, shard, prefetcher))

        if meta:
            state.fetches += 1
            state.link.fetch(meta, data)
        else:
            data()

    def _fetched(self, state: NodeState, shard: int, prefetcher: Reader | None) -> None:
        now = self.clock.now
        state.cache.fetched(shard, now)
        state.note_usage(now)
        state.fetch_bytes += int(self.fetch_sizes[shard])
        state.fetches += 1
        if prefetcher is not None:
            prefetcher.active -= 1
            self._sized(state, prefetcher)
            self._pump(state, prefetcher)
        for waiter in state.waiters.pop(shard, []):
            waiter.waiting = False
            self._try_read(state, waiter)
        if state.room_waiters:  # room was freed: reads waiting for it try again
            waiting, state.room_waiters = state.room_waiters, []
            for waiter in waiting:
                waiter.waiting = False
                self._try_read(state, waiter)
