"""When each shard is needed next, from the node's known epoch order (for Belady eviction).

The order of an epoch is fixed before it starts, so the cache need not guess from recency which
shard to drop: it can drop the one needed furthest in the future (never again first), which is
optimal for a single reader (Belady's rule) and close to it for workers that advance together.

A `UseSchedule` is built once per epoch from the node's plan (one row of shard ids per worker,
all advancing on one clock: the position within a worker's list) and answers "next use at or
after position `now`" for every shard at once with one vectorised search. It keeps the starts of
runs (a worker moving to a shard), not every position: a shard in the middle of a run is the one
that worker is reading, which the cache protects anyway. Past `budget` run starts the positions
are rounded down to a coarser quantum, so the schedule stays bounded whatever the epoch size.
Pure: no I/O, no globals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NEVER", "UseCursor", "UseSchedule", "offline_optimum_bytes"]

#: Next use of a shard the rest of the epoch does not need.
NEVER = np.iinfo(np.int64).max

#: Most keys a schedule keeps (16 MiB of int64) before it coarsens its clock.
BUDGET = 1 << 21


@dataclass(frozen=True)
class UseSchedule:
    """Sorted ``shard * span + quantum index`` keys, one per quantum in which a shard is used."""

    keys: np.ndarray  # int64, sorted, unique
    span: int  # quanta per shard in the key space (one more than the last quantum)
    quantum: int
    num_shards: int

    @classmethod
    def build(cls, shard_rows: np.ndarray, num_shards: int,
              budget: int = BUDGET) -> UseSchedule:
        """The schedule of one epoch on one node.

        Args:
            shard_rows: (workers, positions) shard id of each worker's position, -1 for padding.
                A 1-D array is one worker.
            num_shards: how many shards the dataset has (ids are ``0..num_shards-1``).
            budget: most run starts kept at full precision; more coarsen the clock to
                ``ceil(starts / budget)`` positions per step.
        """
        if budget < 1:
            raise ValueError(f"`budget` must be at least 1, got {budget}.")
        rows = np.atleast_2d(np.asarray(shard_rows, np.int64))
        starts = np.ones(rows.shape, bool)
        starts[:, 1:] = rows[:, 1:] != rows[:, :-1]
        starts &= rows >= 0
        worker, position = np.nonzero(starts)
        quantum = max(1, -(-len(position) // budget))
        span = -(-rows.shape[1] // quantum) + 1
        keys = rows[worker, position] * span + position // quantum
        if num_shards * span < 1 << 32:  # sorting 32-bit keys takes half the time
            keys = keys.astype(np.uint32)
        keys.sort()
        # Dropping repeats of a sorted array: several times faster than np.unique's hashing.
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys
        return cls(keys.astype(np.int64), span, quantum, num_shards)

    def step(self, now: int) -> int:
        """The schedule's clock step of position `now` (answers change only between steps)."""
        return min(max(int(now), 0) // self.quantum, self.span - 1)

    def next_use(self, now: int) -> np.ndarray:
        """Per shard, the first position at or after `now` (both rounded down to the quantum) at
        which some worker starts reading it, or `NEVER`."""
        base = np.arange(self.num_shards, dtype=np.int64) * self.span
        return self.answer(np.searchsorted(self.keys, base + self.step(now)), base)

    def answer(self, found: np.ndarray, base: np.ndarray) -> np.ndarray:
        """Next uses from each shard's place in `keys` (the first key at or after its query)."""
        hit = np.zeros(self.num_shards, bool)
        inside = found < len(self.keys)
        hit[inside] = self.keys[found[inside]] < base[inside] + self.span
        out = np.full(self.num_shards, NEVER, np.int64)
        out[hit] = (self.keys[found[hit]] - base[hit]) * self.quantum
        return out


class UseCursor:
    """`UseSchedule.next_use` for a clock that mostly moves forward (the slowest reader's place).

    Each shard keeps its place in the schedule's keys between calls, so a later call searches
    again only for the shards whose next use the clock has passed, instead of all of them: on a
    schedule of tens of millions of keys that is the difference between a few milliseconds per
    call (a random access per shard) and a few microseconds. A clock that moves back searches
    everything again. Same answers as `next_use`.
    """

    def __init__(self, schedule: UseSchedule) -> None:
        self.schedule = schedule
        self._base = np.arange(schedule.num_shards, dtype=np.int64) * schedule.span
        self._step = -1
        self._found = np.empty(0, np.int64)

    def next_use(self, now: int) -> np.ndarray:
        schedule, base = self.schedule, self._base
        step, keys = schedule.step(now), schedule.keys
        if self._step < 0 or step < self._step:
            self._found = np.searchsorted(keys, base + step)
        elif step > self._step:
            found = self._found
            current = np.full(len(found), NEVER, np.int64)
            inside = found < len(keys)
            current[inside] = keys[found[inside]]
            passed = np.flatnonzero(current < base + step)
            if len(passed):
                found[passed] = np.searchsorted(keys, base[passed] + step)
        self._step = step
        return schedule.answer(self._found, base)


def offline_optimum_bytes(sequence: np.ndarray, sizes: np.ndarray, capacity: int) -> int:
    """Bytes a cache of `capacity` fetches over `sequence` (shard ids in read order) under
    Belady's rule with the exact future: the yardstick for eviction policies (tests, benchmarks).
    Not a hot path; plain Python over the distinct shard changes."""
    seq = np.asarray(sequence, np.int64)
    keep = np.ones(len(seq), bool)
    keep[1:] = seq[1:] != seq[:-1]  # re-reading the shard just read costs nothing
    order = seq[keep].tolist()
    following = [0] * len(order)
    upcoming: dict[int, int] = {}
    for i in range(len(order) - 1, -1, -1):
        following[i] = upcoming.get(order[i], NEVER)
        upcoming[order[i]] = i
    resident: dict[int, int] = {}
    used = fetched = 0
    for i, shard in enumerate(order):
        if shard not in resident:
            fetched += int(sizes[shard])
            while used + int(sizes[shard]) > capacity and resident:
                victim = max(resident, key=resident.__getitem__)
                used -= int(sizes[victim])
                del resident[victim]
            used += int(sizes[shard])
        resident[shard] = following[i]
    return fetched
