"""Partitions: which (big) sample ids each physical node, rank, worker and batch gets.

`get_partitions` is the reference's dispatcher (`streaming.base.partition`); `partition` is the
same with an optional id `table` composed in, so a shuffled, resampled epoch is laid out in one
pass instead of three `where` passes. Algorithms register in `algos` by their config name: one
a user puts there (a new name, or replacing ours) is called with the reference's arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streaming.order.defaults import algorithm
from streaming.order.partition import orig, relaxed
from streaming.order.partition.orig import Table, get_partitions_orig, partition_orig
from streaming.order.partition.relaxed import get_partitions_relaxed, partition_relaxed

__all__ = ["Table", "algos", "get_partitions", "get_partitions_orig", "get_partitions_relaxed",
           "orig", "partition", "relaxed", "resume_limit"]

logger = logging.getLogger(__name__)

algos: dict[str, Callable[..., NDArray[np.int64]]] = {
    'orig': get_partitions_orig,
    'relaxed': get_partitions_relaxed,
}

_TABLE_ALGOS: dict[str, Callable[..., NDArray[np.int64]]] = {
    'orig': lambda *args, table: partition_orig(*args[:7], table=table),
    'relaxed': partition_relaxed,
}
_SHIPPED = dict(algos)  # an entry of `algos` other than these is the user's own (see `partition`)

_NAMES = ('num_samples', 'num_canonical_nodes', 'num_physical_nodes', 'ranks_per_node',
          'workers_per_rank', 'batch_size', 'drop_first')


def _check_not_negative(values: tuple[int, ...]) -> None:
    """Reject negative sizes up front (the reference returns garbage or fails inside numpy)."""
    for name, value in zip(_NAMES, values):
        if value < 0:
            raise ValueError(f'`{name}` must be non-negative, but got: {value}.')


def resume_limit(num_samples: int, num_ranks: int, num_canonical_nodes: int | None = None,
                 num_physical_nodes: int = 1) -> int:
    """The furthest position of an epoch a run on `num_ranks` ranks can resume from.

    An epoch is padded with repeated samples twice: each canonical node's range to the same
    length, then each physical node's sequence to a multiple of its ranks (a whole extra round
    when it already is one, as in the reference). A checkpoint taken at the very end of an epoch
    counts every padded sample. The reference bounds only the second padding, so it refuses to
    resume such a checkpoint when `num_canonical_nodes` does not divide the epoch (4,032 samples
    consumed of 4,030 on 4 canonical nodes). Given the node counts, this bound is the padded
    epoch itself: the dataset's planner (`plan_random`) resumes up to it (`partition`'s
    `padded_resume`), while `get_partitions` keeps the reference's bound and error.
    """
    limit = num_samples + num_ranks - (num_samples % num_ranks)
    if num_canonical_nodes and num_physical_nodes and num_samples:
        c, p = num_canonical_nodes, num_physical_nodes
        per_canonical = -(-num_samples // c)
        if c < p:  # a canonical node's range is split over p // c physical nodes
            per_canonical += -per_canonical % (p // c)
        node = c * per_canonical // p
        node += -node % max(num_ranks // p, 1)
        limit = max(limit, node * p)
    return limit


def _check_resumable(num_samples: int, num_physical_nodes: int, ranks_per_node: int,
                     drop_first: int) -> None:
    """The reference's bound (its golden vectors raise here): the rank padding only."""
    if resume_limit(num_samples, ranks_per_node * num_physical_nodes) < drop_first:
        raise ValueError(f'Resuming further into the dataset ({drop_first}) than it has samples '
                         f'({num_samples})')


def partition(algo: str, num_samples: int, num_canonical_nodes: int, num_physical_nodes: int,
              ranks_per_node: int, workers_per_rank: int, batch_size: int, drop_first: int = 0,
              initial_physical_nodes: int | None = None, *,
              table: Table = None, padded_resume: bool = False) -> NDArray[np.int64]:
    """Partition `table[0:num_samples]` (the ids themselves when `table` is None).

    `table` may be a zero-argument callable; it is called once, after every check that can fail
    has passed, so errors surface in the reference's order (partition before shuffle).
    `padded_resume` lets `drop_first` reach the end of the padded epoch (`resume_limit` given
    the node counts: a checkpoint taken at the very end of an epoch), where the reference's
    bound counts the rank padding only.

    Returns exactly `where(p != -1, table[p], -1)` for `p = get_partitions(...)`.

    Raises:
        KeyError: unknown `algo`.
        ValueError: resuming past the end, negative sizes, or node counts that cannot be striped.
        ZeroDivisionError: a zero node, rank, worker or batch count (as the reference does).
    """
    sizes = (num_samples, num_canonical_nodes, num_physical_nodes, ranks_per_node,
             workers_per_rank, batch_size, drop_first)
    _check_not_negative(sizes)
    if not padded_resume or drop_first > resume_limit(
            num_samples, num_physical_nodes * ranks_per_node, num_canonical_nodes,
            num_physical_nodes):
        _check_resumable(num_samples, num_physical_nodes, ranks_per_node, drop_first)
    chosen = algorithm(algos, algo, "partition_algo")
    if chosen is _SHIPPED.get(algo):
        return _TABLE_ALGOS[algo](*(int(x) for x in sizes), initial_physical_nodes, table=table)
    # An algorithm the user put in `algos` (a new name, or replacing ours), called as the
    # reference calls it; the table is composed in after.
    ids = np.asarray(chosen(*(int(x) for x in sizes), initial_physical_nodes), np.int64)
    values = table() if callable(table) else table
    if values is None:  # the ids are the samples
        return ids
    return np.where(ids != -1, np.asarray(values, np.int64)[np.maximum(ids, 0)], -1)


def get_partitions(algo: str, num_samples: int, num_canonical_nodes: int,
                   num_physical_nodes: int, ranks_per_node: int, workers_per_rank: int,
                   batch_size: int, drop_first: int = 0,
                   initial_physical_nodes: int | None = None) -> NDArray[np.int64]:
    """Sample ids per `(physical node, rank, worker, batch, slot)`, -1 for padding.

    The order depends only on `num_canonical_nodes` (and the initial node count for `relaxed`),
    not on the physical world: read in traversal order (`out.transpose(3, 2, 0, 1, 4)`, one
    row of `P * R * B` per worker round), every world walks the same sample sequence, up to the
    order inside each round and the padding at the end.

    Raises:
        KeyError: unknown `algo`.
        ValueError: see `partition`.
    """
    return partition(algo, num_samples, num_canonical_nodes, num_physical_nodes, ranks_per_node,
                     workers_per_rank, batch_size, drop_first, initial_physical_nodes)
