"""Span bookkeeping shared by the shard-aware shuffles (py1s, py1b, py1br, py1e).

A span is a shuffle unit's id range `[begin, begin + size)`; we keep spans as two flat int64
arrays instead of the reference's Python list of tuples. The generator calls are the
reference's, one for one: `Generator.shuffle` of a list and of `arange(len(list))` consume the
stream identically (checked against numpy), so a list shuffle becomes a permutation array.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from streaming.order.rng import epoch_rng, run_rng

__all__ = [
    "Spans", "divide", "epoch_order", "epoch_spans", "fill_and_shuffle", "fill_spans",
    "run_order",
]


class Spans(NamedTuple):
    """Spans in output order, grouped into canonical nodes.

    `begins`/`sizes` describe each span; canonical node `p` owns spans
    `bounds[p]:bounds[p + 1]`.
    """

    begins: NDArray[np.int64]
    sizes: NDArray[np.int64]
    bounds: NDArray[np.int64]

    def offsets(self) -> NDArray[np.int64]:
        """Output position of each span's first sample."""
        ends = np.cumsum(self.sizes)
        return ends - self.sizes

    def node_ranges(self) -> list[tuple[int, int]]:
        """Each canonical node's `[start, stop)` range of output positions."""
        ends = np.concatenate([[0], np.cumsum(self.sizes)])[self.bounds].tolist()
        return list(zip(ends[:-1], ends[1:]))


def run_order(shard_sizes: NDArray[np.int64], seed: int) -> tuple[NDArray[np.int64],
                                                                    NDArray[np.int64]]:
    """Shuffle units in the order fixed for the whole run.

    Generator calls: `run_rng(seed).shuffle(<list of len(shard_sizes)>)`.

    Returns:
        `(begins, sizes)` of every unit, in run order.
    """
    sizes = np.asarray(shard_sizes, np.int64)
    begins = np.cumsum(sizes) - sizes
    perm = np.arange(len(sizes), dtype=np.int64)
    run_rng(seed).shuffle(perm)
    return begins[perm], sizes[perm]


def divide(begins: NDArray[np.int64], sizes: NDArray[np.int64], num_samples: int,
           num_parts: int) -> Spans:
    """Cut a span sequence into `num_parts` parts of `num_samples * (p+1) // num_parts` ends.

    A span crossing a part boundary is split there: its head closes part p and its remainder
    opens part p + 1 (the reference's `divide_spans`, including where empty spans land and
    dropping whatever lies past `num_samples`). No generator calls.
    """
    ends = np.cumsum(sizes)
    starts = ends - sizes
    cuts = np.arange(1, num_parts + 1, dtype=np.int64) * num_samples // num_parts
    # Boundaries strictly inside a span split it (a repeated boundary splits once).
    owner = np.searchsorted(ends, cuts, side='right')
    inside = owner < len(sizes)
    inside[inside] &= starts[owner[inside]] < cuts[inside]
    split_at = np.unique(cuts[inside])
    split_owner = np.searchsorted(ends, split_at, side='right')
    keys = np.concatenate([starts, split_at])
    owners = np.concatenate([np.arange(len(sizes), dtype=np.int64), split_owner])
    order = np.argsort(keys, kind='stable')
    piece_starts, piece_owners = keys[order], owners[order]
    piece_ends = np.append(piece_starts[1:], ends[-1:])
    # Each piece belongs to the first part whose boundary is at or after its end.
    part = np.searchsorted(cuts, piece_ends, side='left')
    keep = part < num_parts
    piece_begins = begins[piece_owners] + (piece_starts - starts[piece_owners])
    counts = np.bincount(part[keep], minlength=num_parts)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Spans(piece_begins[keep], (piece_ends - piece_starts)[keep], bounds)


def epoch_order(spans: Spans, rng: np.random.Generator) -> Spans:
    """Reorder each canonical node's spans for this epoch.

    Generator calls: for each canonical node in order, `rng.shuffle(<list of its spans>)`.
    """
    order = np.arange(len(spans.sizes), dtype=np.int64)
    bounds = spans.bounds.tolist()
    for begin, end in zip(bounds[:-1], bounds[1:]):
        rng.shuffle(order[begin:end])
    return Spans(spans.begins[order], spans.sizes[order], spans.bounds)


def epoch_spans(shard_sizes: NDArray[np.int64], num_canonical_nodes: int, seed: int,
                epoch: int) -> tuple[Spans, np.random.Generator, int]:
    """The common setup of the shard-aware shuffles: run order, node split, epoch order.

    Generator calls: `run_rng(seed).shuffle(units)`; then with `e = epoch_rng(seed, epoch)`,
    `e.shuffle(spans of node p)` for each canonical node.

    Returns:
        The spans in this epoch's order, the epoch generator (for the algorithm's further
        calls) and the number of samples.
    """
    begins, sizes = run_order(shard_sizes, seed)
    num_samples = int(sizes.sum())
    rng = epoch_rng(seed, epoch)
    spans = epoch_order(divide(begins, sizes, num_samples, num_canonical_nodes), rng)
    return spans, rng, num_samples


def fill_spans(out: NDArray[np.int64], begins: NDArray[np.int64],
               sizes: NDArray[np.int64]) -> None:
    """Write `arange(begin, begin + size)` of each span back to back into `out`.

    One cumulative sum over `out` (steps of 1, jumps at span starts) instead of one arange per
    span; `out` must have exactly `sizes.sum()` elements.
    """
    if not len(out):
        return
    nonzero = sizes > 0
    begins, sizes = begins[nonzero], sizes[nonzero]
    offsets = np.cumsum(sizes) - sizes
    jumps = begins.copy()
    jumps[1:] -= begins[:-1] + sizes[:-1] - 1
    out.fill(1)
    out[offsets] = jumps
    np.cumsum(out, dtype=out.dtype, out=out)


def fill_and_shuffle(rng: np.random.Generator, values: NDArray[np.int64],
                     begins: NDArray[np.int64], sizes: NDArray[np.int64]) -> None:
    """Write each span's `arange(begin, begin + size)` back to back, shuffling each in place.

    Generator calls: `rng.shuffle(span)` per span in order (spans of 0 or 1 samples draw
    nothing, so they are skipped). Each span is shuffled right after it is written, while it is
    still in cache.
    """
    if not len(sizes):
        return
    ramp = np.arange(int(sizes.max()), dtype=np.int64)
    add, shuffle = np.add, rng.shuffle
    offset = 0
    for begin, size in zip(begins.tolist(), sizes.tolist()):
        span = values[offset:offset + size]
        add(ramp[:size], begin, out=span)
        if size > 1:
            shuffle(span)
        offset += size
