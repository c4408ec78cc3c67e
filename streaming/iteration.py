"""Yield one worker's samples for an epoch: bulk reads of shard runs, shards prefetched ahead.

The worker's sample ids (a zero-copy view of the node's shared plan) are walked in chunks, so a
worker's own memory stays O(chunk) whatever the epoch size. Within a chunk, consecutive positions
reading consecutive samples of one shard form a run that the shard reader decodes in bulk; other
positions are read one by one. Shared cache bookkeeping (in-use slot, LRU stamps) is written once
per shard change or chunk, never per sample. Background threads (`streaming.prefetch`, as many
as the link rewards) prepare shards in first-use order at most `predownload` samples ahead; a
failed prefetch is only logged: the reader fetches that shard itself when it gets there and
raises the real error if it persists. Either side stops promptly: an abandoned iterator (or
interpreter exit) never hangs.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from itertools import chain, repeat
from typing import Any

import numpy as np

from streaming.batch_columns import BatchParts
from streaming.epoch_reads import EpochReads
from streaming.errors import DatasetClosedError, StreamingError
from streaming.metrics.counters import column
from streaming.prefetch import CHUNK, Prefetcher, first_uses

__all__ = ["CHUNK", "MIN_RUN", "EpochReads", "drop_padding", "early_prefix", "epoch_samples",
           "first_uses", "iterate_batches", "iterate_epoch", "runs"]

_SAMPLES = column("samples")
MIN_RUN = 16  # shorter runs are read one by one: measured break-even of a bulk decode's set-up
_MAX_STEP = 1024  # a bulk read reports progress to the prefetcher at least this often
_COUNT_EVERY = 64  # samples read one by one are counted in groups this large

log = logging.getLogger(__name__)


def drop_padding(ids: np.ndarray) -> np.ndarray:
    """`ids` without its -1 padding: a view when the padding is only at the end (the usual case),
    so a worker never copies its share of the node's plan; a compacted copy otherwise."""
    bad = ids < 0
    count = int(np.count_nonzero(bad))
    if not count:
        return ids
    keep = len(ids) - count
    if not bad[:keep].any():
        return ids[:keep]
    return ids[~bad]


def runs(shard_ids: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end positions of maximal runs of one shard with consecutive sample indices."""
    n = len(shard_ids)
    if not n:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    breaks = np.flatnonzero((shard_ids[1:] != shard_ids[:-1])
                            | (indices[1:] != indices[:-1] + 1)) + 1
    return np.concatenate(([0], breaks)), np.concatenate((breaks, [n]))


def early_prefix(reads: EpochReads, ids: np.ndarray, limit: int) -> list[Any]:
    """The samples of the first positions of `ids` (at most `limit`) that can be read from the
    remote before their shards land, in order: a run at a time, stopping at the first that
    cannot."""
    if not reads.early_limit or not len(ids) or limit < 1:
        return []
    shard_ids, indices = reads.locate(ids[:limit])
    starts, ends = runs(shard_ids, indices)
    samples: list[Any] = []
    for start, end in zip(starts.tolist(), ends.tolist()):
        shard = int(shard_ids[start])
        reads.enter(shard, start)
        got = reads.early_samples(shard, indices[start:end])
        if got is None:
            break
        samples += got
    return samples


class _Run:
    """The bulk run whose samples the consumer is pulling (shard, first, stop), or None while
    anything else runs: a decoder's error met in it is reported as that run's (see
    `epoch_samples`)."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current: tuple[int, int, int] | None = None


def _chunk_parts(reads: EpochReads, prefetcher: Prefetcher, begin: int, ids: np.ndarray,
                 shard_ids: np.ndarray, indices: np.ndarray, run: _Run) -> Iterator[Iterable[Any]]:
    """One chunk's samples as iterables to chain: bulk runs when they are long on average, else
    one iterable reading them one by one."""
    starts, ends = runs(shard_ids, indices)
    counters = reads.counters
    if reads.get_item is None and len(starts) * MIN_RUN <= len(ids):
        step = max(MIN_RUN, min(_MAX_STEP, prefetcher.window // 4))
        read_one = reads.read_one
        for start, end, shard, index in zip(starts.tolist(), ends.tolist(),
                                            shard_ids[starts].tolist(), indices[starts].tolist()):
            reads.enter(shard, begin + start)
            if end - start < MIN_RUN:
                counters.add_at(_SAMPLES, end - start)
                prefetcher.consumed = begin + start
                yield map(read_one, repeat(shard, end - start), range(index, index + end - start))
                continue
            for sub in range(0, end - start, step):  # progress reports keep prefetch ahead
                prefetcher.consumed = begin + start + sub
                lo, hi = index + sub, index + min(sub + step, end - start)
                counters.add_at(_SAMPLES, hi - lo)
                samples = reads.read_run(shard, lo, hi)
                run.current = (shard, lo, hi)
                yield samples
                run.current = None
        return
    yield _one_by_one(reads, prefetcher, begin, ids, shard_ids, indices)


def _one_by_one(reads: EpochReads, prefetcher: Prefetcher, begin: int, ids: np.ndarray,
                shard_ids: np.ndarray, indices: np.ndarray) -> Iterator[Any]:
    """Read and yield one sample at a time; the `samples` counter follows what was handed
    over, `_COUNT_EVERY` samples at a time and the rest when the chunk ends (or is abandoned)."""
    current = -1
    counted = handed = 0
    read_one, read_first, get_item = reads.read_one, reads.read_first, reads.get_item
    counters = reads.counters
    try:
        for position, (shard, index) in enumerate(zip(shard_ids.tolist(), indices.tolist())):
            prefetcher.consumed = begin + position
            read = read_one
            if shard != current:
                reads.enter(shard, begin + position)
                current, read = shard, read_first
            if position - counted >= _COUNT_EVERY:
                counters.add_at(_SAMPLES, position - counted)
                counted = position
            sample = read(shard, index) if get_item is None else get_item(int(ids[position]))
            handed = position + 1
            yield sample
    finally:
        counters.add_at(_SAMPLES, handed - counted)


def _epoch_parts(sample_ids: np.ndarray, reads: EpochReads, prefetcher: Prefetcher,
                 run: _Run) -> Generator[Iterable[Any], None, None]:
    # While the prefetcher fetches their shards:
    early = early_prefix(reads, sample_ids, reads.early_limit)
    reads.counters.add_at(_SAMPLES, len(early))
    yield early
    for begin in range(len(early), len(sample_ids), CHUNK):
        ids = sample_ids[begin:begin + CHUNK]
        shard_ids, indices = reads.locate(ids)
        reads.stamp(shard_ids)
        yield from _chunk_parts(reads, prefetcher, begin, ids, shard_ids, indices, run)
        reads.restore_missing(shard_ids)


def iterate_epoch(sample_ids: np.ndarray, reads: EpochReads, predownload: int) -> Iterator[Any]:
    """Yield the samples of `sample_ids` in order, prefetching their shards ahead.

    Args:
        sample_ids: the worker's global sample ids in yield order, padding removed (see
            `drop_padding`); may be a read-only view of shared memory.
        reads: how this worker reads samples and keeps the node cache informed.
        predownload: how many samples ahead of the consumer the prefetcher may work.
    """
    return epoch_samples(lambda: (sample_ids, reads), predownload)


def epoch_samples(begin: Callable[[], tuple[np.ndarray, EpochReads]],
                  predownload: int, ended_why: Callable[[], str | None] = lambda: None
                  ) -> Iterator[Any]:
    """`iterate_epoch`, with its sample ids and reads made by `begin` at the first `next`.

    The epoch is a chain (in C) of iterables, one per bulk run or chunk: each sample passes
    through this generator's frame and the reader's own, never through one frame per layer of
    planning (each resumed frame costs ~0.1 us a sample). A decoder's own error (`ValueError`,
    `struct.error`) met in a bulk run is raised as `Reader.undecodable_run`, naming the run.

    Closed while `ended_why()` says why (the dataset gave way to another: `outlive_close`),
    it releases what it holds but stays suspended, and raises `DatasetClosedError` with that
    reason at its next `next`: whoever resumes it hears the epoch was cut, not a silent end.
    """
    sample_ids, reads = begin()
    prefetcher = Prefetcher(sample_ids, reads, predownload, reads.fetched_bytes,
                            on_count=reads.count_fetches)
    prefetcher.start()
    run = _Run()
    parts = _epoch_parts(sample_ids, reads, prefetcher, run)
    released = False
    try:
        yield from chain.from_iterable(parts)
    except GeneratorExit:
        why = ended_why()
        if why is None:
            raise
        parts.close()
        reads.leave()
        prefetcher.finish()
        released = True
        yield from outlive_close(why)
    except Exception as err:  # not by name: an iterator finalised at exit may outlive them
        # Ours (a hash mismatch, a bad shard) say it already; a bulk decoder's own does not.
        if run.current is None or not isinstance(err, (ValueError, struct.error)):
            raise
        shard, lo, hi = run.current
        reads.discard_bad_copy(shard)
        if isinstance(err, StreamingError):
            raise
        raise reads.readers[shard].undecodable_run(lo, hi, err) from err
    finally:
        if not released:  # (released before its dataset closed: its slots are gone now)
            parts.close()
            reads.leave()
            prefetcher.finish()


def outlive_close(why: str) -> Iterator[Any]:
    """What an iteration closed by `SuspendedIterations.end` for a new dataset yields from in
    place of its samples: one step, so that the `close()` finds it still suspended (its caller
    ignores the `RuntimeError` Python raises for that), then `DatasetClosedError(why)` at the
    next `next`. A garbage collection, or a second `close()`, ends it without a word."""
    yield None
    raise DatasetClosedError(why)


def iterate_batches(sample_ids: np.ndarray, reads: EpochReads, predownload: int,
                    batch_size: int, drop_last: bool) -> Iterator[dict[str, Any]]:
    """Yield the samples of `sample_ids` as batches of columns (`streaming.batch_columns`).

    The same samples in the same order as `iterate_epoch`, `batch_size` at a time (the last
    batch shorter unless `drop_last`), with the same prefetching and cache bookkeeping. Each
    batch is read shard by shard: a shard that gives columns has its samples gathered straight
    from its bytes (one copy per column); others are read one sample at a time.
    """
    prefetcher = Prefetcher(sample_ids, reads, predownload, reads.fetched_bytes,
                            on_count=reads.count_fetches)
    prefetcher.start()
    try:
        total = len(sample_ids)
        stop = total - total % batch_size if drop_last else total
        touched: list[np.ndarray] = []
        checked = 0
        for begin in range(0, stop, batch_size):
            ids = sample_ids[begin:begin + batch_size]
            shard_ids, indices = reads.locate(ids)
            reads.stamp(shard_ids)
            prefetcher.consumed = begin
            counters = reads.counters
            waited, decoding = counters.value("shard_wait_seconds"), time.perf_counter()
            early = early_prefix(reads, ids, len(ids)) if begin == 0 else []
            if len(early) == len(ids):  # the whole first batch read ahead of its shards
                parts = BatchParts(len(ids))
                parts.add_samples(np.arange(len(ids)), early)
                batch = parts.build()
            else:
                batch = _read_batch(reads, begin, ids, shard_ids, indices)
            waited = counters.value("shard_wait_seconds") - waited  # not decoding: waiting
            counters.add_many({"decode_seconds": time.perf_counter() - decoding - waited,
                               "decoded_samples": len(ids), "samples": len(ids), "batches": 1})
            yield batch
            touched.append(shard_ids)
            if begin + batch_size - checked >= CHUNK:  # one stat per shard per chunk, as above
                reads.restore_missing(np.concatenate(touched))
                touched, checked = [], begin + batch_size
        if touched:
            reads.restore_missing(np.concatenate(touched))
    finally:
        reads.leave()
        prefetcher.finish()


def _read_batch(reads: EpochReads, begin: int, ids: np.ndarray, shard_ids: np.ndarray,
                indices: np.ndarray) -> dict[str, Any]:
    parts = BatchParts(len(ids))
    if reads.get_item is not None:  # a subclass's own reads (transforms): sample by sample
        parts.add_samples(np.arange(len(ids)), [reads.get_item(int(i)) for i in ids.tolist()])
        return parts.build()
    order = np.argsort(shard_ids, kind="stable")  # each shard's positions, in batch order
    grouped = shard_ids[order]
    cuts = np.flatnonzero(grouped[1:] != grouped[:-1]) + 1
    for positions in np.split(order, cuts):
        shard = int(shard_ids[positions[0]])
        reads.enter(shard, begin + int(positions[0]))
        wanted = indices[positions]
        columns = reads.read_columns(shard, wanted)
        if columns is None:
            parts.add_samples(positions, [reads.read_one(shard, i) for i in wanted.tolist()])
        else:
            parts.add_columns(positions, columns)
    return parts.build()
