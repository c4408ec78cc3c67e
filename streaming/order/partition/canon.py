"""The reference's canonical-node id matrix, read one physical node slice at a time.

The `orig` partition's first steps (spec §6.1, steps 3-5): split the samples into one row per
canonical node (short rows repeat their last id, padding columns copy earlier ones), read the
matrix column by column and deal it round-robin to physical nodes. Nothing of size N is built:
`read` returns any slice of a node's sequence straight from the id table. Pure numpy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["CanonicalMatrix", "Table"]

# What a partition reads its ids from: an array, a thunk making one (called only once every
# check has passed, so errors come in the reference's order), or None for the ids themselves.
Ids = NDArray[np.signedinteger]
Table = Ids | Callable[[], Ids | None] | None


def _padding_columns(spc: int, pspc: int, padding: int, ratio: int,
                     num_canonical_nodes: int) -> NDArray[np.int64]:
    """Column each of the `pspc` columns copies from (itself, or a real column for padding)."""
    cols = np.arange(pspc, dtype=np.int64)
    if padding:
        # Same (negative, possibly clipped) slice as the reference, so same broadcasting rules.
        src = cols[-padding - ratio + 1 - padding:-padding - ratio + 1]
        if len(src) not in (1, padding):
            raise ValueError(f'could not broadcast input array from shape '
                             f'({num_canonical_nodes},{len(src)}) into shape '
                             f'({num_canonical_nodes},{padding})')
        cols[-padding:] = src
    return cols


class CanonicalMatrix:
    """The reference's `(canonical nodes, padded samples per canonical node)` id matrix, lazily.

    Row `r`, column `c` holds `table[start_r + c]` (the last real column of a short row repeats
    its last sample; padding columns copy earlier columns), or the cyclic fallback when there
    are too few samples. `table=None` means the identity (big ids themselves).
    """

    def __init__(self, num_samples: int, num_canonical_nodes: int, num_physical_nodes: int,
                 table: Table) -> None:
        n, c, p = num_samples, num_canonical_nodes, num_physical_nodes
        self.n, self.c, self._source = n, c, table
        self._table: NDArray[np.signedinteger] | None = None
        self.spc = (n + c - 1) // c
        self.ratio = p // c if c < p else 0
        overflow = self.spc % self.ratio if self.ratio else 0
        self.padding = self.ratio - overflow if overflow else 0
        self.pspc = self.spc + self.padding
        self._dense: NDArray[np.int64] | None = None
        if n > c or (n == c and c >= p):
            self.cols = _padding_columns(self.spc, self.pspc, self.padding, self.ratio, c)
        else:
            warnings.warn(f'Trying to partition {n} samples over {c} canonical nodes. This will '
                          f'result in many samples being repeated, and depending on your batching '
                          f'method, batches being completely dropped. Check if your dataset has '
                          f'the expected number of samples, and consider decreasing the number of '
                          f'canonical nodes.', stacklevel=2)
            total = c * self.pspc
            total // n  # noqa: B018 - the reference divides by the sample count here
            self._dense = (np.arange(total, dtype=np.int64) % n).reshape(c, self.pspc)

    @property
    def table(self) -> NDArray[np.signedinteger] | None:
        """The id table, produced on first use (after every geometry check has passed)."""
        if callable(self._source):
            self._table, self._source = self._source(), None
        elif self._source is not None:
            self._table, self._source = self._source, None
        return self._table

    def _take(self, idx: NDArray[np.int64]) -> NDArray[np.int64]:
        return idx if self.table is None else np.take(self.table, idx)

    def row_bounds(self, row: int) -> tuple[int, bool]:
        """First big id of a canonical row and whether the row is one sample short."""
        start = row * self.n // self.c
        stop = (row + 1) * self.n // self.c
        return start, stop - start < self.spc

    def node_length(self, num_physical_nodes: int) -> int:
        """Length of each physical node's sequence (before dropping resumed samples)."""
        return self.c * self.pspc // num_physical_nodes

    def read(self, node: int, num_physical_nodes: int, begin: int,
             end: int) -> NDArray[np.int64]:
        """Ids `[begin, end)` of a physical node's sequence.

        The node's sequence is every `P`-th element, from `node` on, of the matrix flattened
        column by column; only the requested slice is materialised.
        """
        p, c = num_physical_nodes, self.c
        if begin >= end:
            return np.empty(0, np.int64)
        if self._dense is not None:
            return self._take(self._dense.T.reshape(-1)[node::p][begin:end])
        if p > c:
            # Several physical nodes share canonical row `node % C`, every ratio-th column.
            start, short = self.row_bounds(node % c)
            cols = self.cols[node // c::self.ratio][begin:end]
            if short:
                cols = cols - (cols == self.spc - 1)
            return self._take(start + cols)
        # Node `node` interleaves canonical rows node, node + P, node + 2P, ... column by column.
        # One index grid for all its rows at once (a loop over rows cost ~1 s per 10^4 rows
        # per request when `num_canonical_nodes` is large).
        per = c // p
        first, last = begin // per, -(-end // per)
        rows = np.arange(per, dtype=np.int64) * p + node
        starts = rows * self.n // c
        grid = np.arange(first, last, dtype=np.int64)[:, None] + starts[None, :]
        if last == self.spc:  # a short row's last column repeats its last sample
            short_rows = (rows + 1) * self.n // c - starts < self.spc
            grid[-1, short_rows] -= 1
        flat = grid.reshape(-1)[begin - first * per:end - first * per]
        return self._take(flat)

    def read_nodes(self, nodes: NDArray[np.int64], num_physical_nodes: int, begin: int,
                   end: int) -> NDArray[np.int64]:
        """Ids `[begin, end)` of several physical nodes' sequences at once: `(len(nodes),
        end - begin)`, row `i` equal to `read(nodes[i], ...)`.

        For partitions of many short node sequences (`device_per_stream` partitions each stream
        over the canonical nodes), where a call per node cost more than its ids.
        """
        p, c = num_physical_nodes, self.c
        nodes = np.asarray(nodes, np.int64)[:, None]
        j = np.arange(begin, end, dtype=np.int64)[None, :]
        if self._dense is not None:
            return self._take(self._dense.T.reshape(-1)[j * p + nodes])
        if p > c:
            rows = nodes % c
            cols = self.cols[nodes // c + j * self.ratio]
        else:
            per = c // p
            rows = (j % per) * p + nodes
            cols = np.broadcast_to(j // per, rows.shape)
        starts = rows * self.n // c
        short = (rows + 1) * self.n // c - starts < self.spc
        return self._take(starts + cols - ((cols == self.spc - 1) & short))
