"""The node cache's runtime counters: which row a process counts in, and what a preparation
adds (`streaming.metrics.counters` keeps the table; `NodeCache` mixes this in).

The counters are also the one record of egress: `egress()` and the prefetcher's link sizer read
the fetch columns, so bytes fetched are counted once, per process, without a lock shared by the
node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.metrics.counters import COLUMNS, MAIN_ROWS, SCHEMES, Counters, column, snapshot

if TYPE_CHECKING:
    from streaming.cache.prepare import PrepareResult
    from streaming.coord import Namespace
    from streaming.coord.array import SharedArray

__all__ = ["NodeMetrics"]



def _every_scheme(what: str) -> slice:
    """The columns of `what` for every scheme, as a strided slice: a view, summed in place
    (the prefetcher reads the node's egress after every shard)."""
    first, second = column(f"fetch_{SCHEMES[0]}_{what}"), column(f"fetch_{SCHEMES[1]}_{what}")
    step = second - first
    last = column(f"fetch_{SCHEMES[-1]}_{what}")
    assert [column(f"fetch_{s}_{what}") for s in SCHEMES] == list(range(first, last + 1, step))
    return slice(first, last + 1, step)


_FETCH_BYTES = _every_scheme("bytes")
_FETCH_SECONDS = _every_scheme("seconds")
_EARLY_BYTES = column("early_bytes")


class NodeMetrics:
    """A row per process of the node in one shared table; reads sum the rows."""

    metrics: SharedArray
    metrics_rows: SharedArray  # uint8 per row of `metrics`: 1 once a process counted there
    fetched_once: SharedArray
    _slots: int
    _row: int
    _counters: Counters | None
    _schemes: list[str]

    def _open_metrics(self, namespace: Namespace, slots: int, shards: int,
                      schemes: list[str]) -> None:
        """`slots` rows for reading workers, then `MAIN_ROWS` for the ranks' main processes;
        `schemes` is each stream's URL scheme ('' for local data)."""
        self.metrics = namespace.array("metrics", np.float64, (slots + MAIN_ROWS, len(COLUMNS)))
        # Reads sum only the rows in use: the whole table is ~2.5 MB, and the first sum over it
        # in a process faults in every page of it (~1.5 ms at each dataset's start).
        self.metrics_rows = namespace.array("metrics_rows", np.uint8, slots + MAIN_ROWS)
        self.fetched_once = namespace.array("fetched_once", np.uint8, shards, fill=0)
        self._slots, self._row, self._counters = slots, slots, None
        self._schemes = schemes

    @property
    def counters(self) -> Counters:
        """This process's row of the node's counters."""
        if self._counters is None:
            self.metrics_rows.numpy()[self._row] = 1  # before the row's first count
            self._counters = Counters(self.metrics.numpy()[self._row])
        return self._counters

    def count_as_worker(self, slot: int) -> None:
        """Count this process's work in the row of its reading slot from now on."""
        self._count_as(slot % self._slots)

    def count_as_main(self, rank_of_node: int) -> None:
        """Count this process's work in the row of its rank's main process from now on."""
        self._count_as(self._slots + rank_of_node % MAIN_ROWS)

    def _count_as(self, row: int) -> None:
        if row != self._row:
            self._row, self._counters = row, None

    def metrics_snapshot(self) -> dict[str, Any]:
        """The node's counters summed over its processes (`streaming.metrics.snapshot`)."""
        return snapshot(self._used_rows())

    def _used_rows(self) -> np.ndarray:
        """The rows of `metrics` that processes counted in (a copy). The flags are copied
        first: other processes set theirs meanwhile, and `nonzero` refuses a changing array."""
        return self.metrics.numpy()[np.flatnonzero(self.metrics_rows.numpy().copy())]

    def egress(self) -> dict[str, Any]:
        """Bytes and seconds this node spent fetching shards so far; the bytes include those
        of early reads (`streaming.cache.early_reads`), which cross the network too."""
        table = self._used_rows()
        return {"bytes": int(table[:, _FETCH_BYTES].sum() + table[:, _EARLY_BYTES].sum()),
                "seconds": float(table[:, _FETCH_SECONDS].sum())}

    def _count_prepare(self, shard: int, stream: int, result: PrepareResult) -> None:
        counters = self.counters
        if result.fetches:
            seen = self.fetched_once.numpy()
            if seen[shard]:
                counters.add("refetches")
            seen[shard] = 1
            counters.fetched(self._schemes[stream], result.fetched_bytes, result.fetch_seconds,
                             result.fetches, result.attempts)
        if result.decompressed_bytes or result.hashed_bytes:
            counters.add_many({"decompress_seconds": result.decompress_seconds,
                               "decompressed_bytes": result.decompressed_bytes,
                               "hash_seconds": result.hash_seconds,
                               "hashed_bytes": result.hashed_bytes})
