"""`StreamingDataLoader`: a `torch.utils.data.DataLoader` that counts what it yielded.

Counting yielded samples is all resumption needs: the dataset turns "this many samples consumed
globally" into its five-integer checkpoint. Owns no data logic; imports the dataset only to
recognise it.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from torch.utils.data import BatchSampler, DataLoader

from streaming.batch_ring import RingReader
from streaming.collate import batch_length, collate_samples, convert_sample
from streaming.dataset import StreamingDataset
from streaming.iteration import outlive_close
from streaming.latest_iteration import Consumer, Resumed, SuspendedIterations, consumer_here
from streaming.loader_batched import (
    WorkerStart,
    batch_sender,
    batched_path,
    headspace,
    own_collate,
    received,
)
from streaming.loader_workers import replace_dead_workers, resume_workers
from streaming.metrics.report import MetricsReporter, SourceGone, reporter_from
from streaming.order.world import World

__all__ = ["StreamingDataLoader"]

_log = logging.getLogger(__name__)


_DATALOADER = inspect.signature(DataLoader.__init__)
# What the batched path sets for torch's iterator, and shows as a plain DataLoader's otherwise.
_SWAPPED = ("collate_fn", "worker_init_fn", "batch_sampler")


def _node_reporter(dataset: Any, path: str | None, interval: float | None,
                   log_interval: float | None) -> MetricsReporter | None:
    """The loader's reporter, holding the dataset weakly. Every rank checks the settings; only
    each node's first rank writes (all read the node's same sums); lines name their node."""
    world, ref = World.detect(), weakref.ref(dataset)

    def read() -> dict[str, Any]:
        alive = ref()
        if alive is None:
            raise SourceGone("the dataset is gone")
        return {"node": world.node, **alive._ss_cache.metrics_snapshot()}  # (a subclass may
        # own the name `metrics`)

    reporter = reporter_from(read, path, interval, log_interval)
    return None if world.rank_of_node else reporter


class StreamingDataLoader(DataLoader):
    """A DataLoader whose `state_dict()` lets a `StreamingDataset` resume mid-epoch.

    Same constructor as `torch.utils.data.DataLoader`. Call `state_dict()` on rank 0 when
    checkpointing and `load_state_dict()` on every rank before iterating. Without a
    `collate_fn` (or with torch's `default_collate`), batches are what `default_collate` makes,
    built faster: each worker (or this process) reads whole batches as columns
    (`StreamingDataset.batches`: no per-sample objects for fixed-size columns) and the loader
    passes them through (`batched` is then True); where that path does not apply, samples are
    collated column-wise
    (`streaming.collate.collate_samples`). A `collate_fn` of your own is used as given, on
    samples as always.

    Args:
        *args: `torch.utils.data.DataLoader`'s, the dataset first.
        metrics_path: append the runtime metrics (`metrics()`) as a JSON line there every
            `metrics_interval` seconds and once at the end (`STREAMING_METRICS_PATH`).
        metrics_interval: seconds between those lines (default 10;
            `STREAMING_METRICS_INTERVAL`).
        metrics_log_interval: log a one-line summary that often (`STREAMING_METRICS_LOG`).
            See `docs/metrics.md`.
        headspace: load the first N batches, then stop the workers and serve those N again
            from memory for the rest of the epoch: the loop runs at the upper bound of the
            training step with loading made free. Not for training: the replayed batches
            repeat, and checkpoints of such an epoch do not describe real progress.
        **kwargs: `torch.utils.data.DataLoader`'s (`batch_size`, `num_workers`, ...).
    """

    def __init__(self, *args: Any, metrics_path: str | None = None,
                 metrics_interval: float | None = None,
                 metrics_log_interval: float | None = None, headspace: int | None = None,
                 **kwargs: Any) -> None:
        if headspace is not None and (type(headspace) is not int or headspace < 1):
            raise ValueError(f"headspace must be a positive number of batches, got "
                             f"{headspace!r}")
        self.headspace = headspace
        bound = _DATALOADER.bind(None, *args, **kwargs)
        batching = batched_path(bound.arguments)
        if batching is None:
            super().__init__(*args, **kwargs)
        else:
            # The batched path: workers yield whole batches read as columns and the loader
            # passes them through (torch's auto-batching off), yet `batch_size`, `drop_last`
            # and `len()` read as the user gave them.
            given = bound.arguments
            user_init = given.get("worker_init_fn")
            given.update(batch_size=None, drop_last=False, collate_fn=batch_sender(given),
                         worker_init_fn=WorkerStart(batching, user_init))
            super().__init__(*bound.args[1:], **bound.kwargs)
            object.__setattr__(self, "batch_size", batching[0])
            object.__setattr__(self, "drop_last", batching[1])
            # Between iterations, the attributes read as a plain DataLoader's: frameworks that
            # build a loader of their own from them (Accelerate's `prepare`) get collation of
            # samples, the user's worker start and a batch sampler (see `_batched_settings`).
            self._internal = {name: getattr(self, name) for name in _SWAPPED}
            public = {"collate_fn": collate_samples, "worker_init_fn": user_init,
                      "batch_sampler": BatchSampler(self.sampler, *batching)}
            for name, value in public.items():
                object.__setattr__(self, name, value)
        if batching is None and self.worker_init_fn is not None and isinstance(
                self.dataset, StreamingDataset) and self.num_workers:
            # The user's worker start, wrapped while torch builds the iterator only (as the
            # batched path's) so that its failure reaches the other workers (`WorkerStart`).
            self._internal = {"worker_init_fn": WorkerStart(None, self.worker_init_fn)}
        self.batched = batching is not None
        self._ring = RingReader()  # maps the slots of workers that send through a ring
        given_fn = kwargs.get("collate_fn", args[6] if len(args) > 6 else None)
        if not self.batched and not own_collate(given_fn) and self._auto_collation:
            # default_collate's result, built column-wise (see `streaming.collate`).
            self.collate_fn = collate_samples
        elif not self.batched and given_fn is None and not self._auto_collation:
            self.collate_fn = convert_sample  # default_convert, keeping views whole
        self.num_samples_yielded = 0
        dataset = self._streaming_dataset()
        if dataset is not None and isinstance(self.batch_size, int):
            dataset.adopt_batch_size(self.batch_size)  # only if it was built without one
        self._warn_on_batch_size_mismatch()
        self._reporter = None if dataset is None else _node_reporter(
            dataset, metrics_path, metrics_interval, metrics_log_interval)
        self.iterating = 0  # iterations begun and not ended
        self._closes = 0  # `close()` calls: an iteration begun before one ends
        # Each iteration's generator and who began it (see `suspended_iterations`).
        self._iterations: weakref.WeakKeyDictionary[Iterator[Any], Resumed] = \
            weakref.WeakKeyDictionary()
        if dataset is not None:
            dataset._track_loader(self)

    def metrics(self) -> dict[str, Any]:
        """Where the time goes, summed over this node's processes (`docs/metrics.md`): the
        dataset's counters, with the wait for batches against the time between them
        (`stall_percent`) of every loader reading this dataset on the node (two loaders over
        one dataset, say train and eval, report the same sums)."""
        dataset = self._streaming_dataset()
        if dataset is None:
            raise TypeError("metrics() needs a StreamingDataset; this loader reads a "
                            f"{type(self.dataset).__name__}.")
        return dataset._ss_cache.metrics_snapshot()  # (not `dataset.metrics()`: a subclass
        # may own that name, as with the reference, which has no such method)

    def _streaming_dataset(self) -> Any | None:

        return self.dataset if isinstance(self.dataset, StreamingDataset) else None

    def _warn_on_batch_size_mismatch(self) -> None:
        dataset = self._streaming_dataset()
        if dataset is None or dataset.batch_size is None:
            return
        if self.batch_size is None and self.num_workers and dataset.batch_size > 1:
            warnings.warn(
                f"StreamingDataLoader(batch_size=None) with {self.num_workers} workers over a "
                f"StreamingDataset of batch_size {dataset.batch_size}: torch interleaves the "
                "workers' samples one at a time, not a batch at a time, so a state_dict() "
                "taken mid-epoch resumes with samples repeated and skipped. Give the loader "
                "the dataset's batch_size, or the dataset batch_size=1.",
                stacklevel=3,
            )
            return
        if self.batch_size is not None and dataset.batch_size != self.batch_size:
            warnings.warn(
                f"StreamingDataset batch_size ({dataset.batch_size}) differs from the "
                f"DataLoader's batch_size ({self.batch_size}). Set them equal: the dataset lays "
                "out samples per device batch, so a mismatch breaks worker/batch alignment and "
                "deterministic resumption.",
                stacklevel=3,
            )

    def _get_batch_size(self, batch: Any) -> int:
        """Samples in `batch` (`batch_length`): the reference's hook, which a subclass
        overrides to count a batch type of its own; the checkpoint counts what it returns."""
        return batch_length(batch)

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]  # our tracked iterator
        iteration = self._iterate()
        self._iterations[iteration] = Resumed(threading.get_ident())
        return iteration

    def _began_here(self, consumer: Consumer | None) -> None:
        """Record the consumer of the iteration whose generator calls this, at its first
        `next` (the loop over it: see `SuspendedIterations.endable`)."""
        frame = sys._getframe(1)
        for iteration, by in list(self._iterations.items()):
            if getattr(iteration, "gi_frame", None) is frame:
                self._iterations[iteration] = by._replace(consumer=consumer)

    def suspended_iterations(self) -> SuspendedIterations:
        """This loader's iterations begun and not ended (see `close_idle_own`)."""
        return SuspendedIterations(list(self._iterations.items()))

    def _iterate(self) -> Iterator[Any]:
        self._began_here(consumer_here())
        self.num_samples_yielded = 0
        # `batch_size=None` (and no batch sampler): torch yields the samples one by one. The
        # reference counted each sample's columns (`len` of its dict) or failed on an int.
        per_item = None if self._auto_collation else 1
        dataset = self._streaming_dataset()
        if dataset is not None:
            dataset._ensure_open()  # before any worker starts (theirs would find it released)
        if self.batched and not self.num_workers and dataset is not None:
            # In this process: the dataset yields batches only to the iterator made now.
            dataset._loader_batches = (self.batch_size, self.drop_last)
            try:
                with self._batched_settings():
                    batches = super().__iter__()
            finally:
                dataset._loader_batches = None
        else:
            replace_dead_workers(self)
            with self._batched_settings():
                batches = resume_workers(self, super().__iter__)
        self._current = weakref.ref(batches)  # for `close`; never keeps the workers alive
        counters = dataset._ss_cache.counters if dataset is not None else None
        if self._reporter is not None:
            self._reporter.start()
        pending = received(batches, self._ring)
        if self.headspace:
            pending = headspace(pending, self.headspace, self._epoch_batches(),
                                 self._stop_workers)
        self.iterating += 1  # (a dataset in use is never closed for a new one: lifecycle)
        left = False
        try:
            yield from self._timed(pending, counters, per_item, self._closes)
        except GeneratorExit:
            why = dataset._ss_ended_why() if dataset is not None else None
            if why is not None and not self._took_all(dataset):  # its dataset gave way:
                # released now, says so if resumed (an epoch all taken just ends)
                left = self._left()
                yield from outlive_close(why)
            raise
        finally:
            if not left:
                self._left()

    def _took_all(self, dataset: Any) -> bool:
        """Whether this iteration handed out every sample of its rank's epoch (all its batches
        taken, the closing StopIteration not yet asked for: a step-counted loop)."""
        last = self.batch_size if self.drop_last and self.batch_size else 1
        return len(dataset) - self.num_samples_yielded < last

    def _left(self) -> bool:
        """An iteration ended, or its loop left it (`break`, `next(iter(loader))`)."""
        self.iterating -= 1
        if not self.iterating and not self.persistent_workers:
            # These workers are done. Stop them now and free their ring slots, the mapped and
            # the in flight: left to the garbage collector, each early exit kept ~3 batches
            # per worker in /dev/shm until `close()`, and two epochs' slots coexisted
            # (Docker's 64 MiB /dev/shm then failed an epoch).
            self._stop_workers()
        return True

    def _timed(self, pending: Iterator[Any], counters: Any,
               per_item: int | None, closes: int) -> Iterator[Any]:
        """`pending`'s batches, counted (each as `per_item` samples, else its length), until
        the loader is closed (`closes` is its count of closes when this iteration began); an
        error stops the workers first."""
        while self._closes == closes:  # a batch in flight at `close()` has lost its slot
            asked = time.perf_counter()
            try:
                batch = next(pending)
            except StopIteration:
                break
            except BaseException:
                # It cannot be resumed, and the error's traceback holds torch's iterator in a
                # reference cycle: shut down from the garbage collector, after its index queues
                # were finalized, it never reached the workers (5 s each, then SIGTERM, before
                # they released the dataset's shared memory). Persistent ones start anew.
                self._stop_workers()
                raise
            self.num_samples_yielded += per_item or self._get_batch_size(batch)
            handed = time.perf_counter()
            if counters is not None:  # waited for this batch (counted before a `break`)...
                counters.add_many({"loader_batches": 1, "loader_wait_seconds": handed - asked})
            yield batch
            if counters is not None:  # ...then away for the step
                counters.add("loader_step_seconds", time.perf_counter() - handed)

    @property
    def batch_sender(self) -> Any:
        """How batches leave the batched path's workers (a `WorkerRing`, or `collate_columns`),
        or the `collate_fn` in use off that path."""
        return getattr(self, "_internal", {}).get("collate_fn", getattr(self, "collate_fn", None))

    @contextlib.contextmanager
    def _batched_settings(self) -> Iterator[None]:
        """The batched path's collation, worker start and (absent) batch sampler, in place
        while torch builds or resets this loader's iterator, which reads them then."""
        internal = getattr(self, "_internal", None)
        if internal is None:
            yield
            return
        public = {name: getattr(self, name) for name in internal}
        for name, value in internal.items():
            object.__setattr__(self, name, value)
        try:
            yield
        finally:
            for name, value in public.items():
                object.__setattr__(self, name, value)

    def _epoch_batches(self) -> int | None:
        try:
            return len(self)
        except TypeError:
            return None

    def state_dict(self) -> dict[str, Any] | None:
        """The dataset's checkpoint for the samples yielded so far by every rank, or None."""
        dataset = self._streaming_dataset()
        if dataset is None:
            return None
        num_samples = self.num_samples_yielded * World.detect().num_ranks
        if dataset.replication is not None:
            # Replicated ranks share sample ids, so they consumed fewer distinct samples.
            num_samples //= dataset.replication
        return dataset.state_dict(num_samples, False)

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Hand a checkpoint to the dataset; takes effect at the next `iter()`."""
        dataset = self._streaming_dataset()
        if dataset is not None:
            dataset.load_state_dict(obj)

    def close(self) -> None:
        """Stop this loader's worker processes now (idempotent), and write the metrics file's
        last line.

        Workers release their hold on the dataset's shared state as they exit, and the batch
        slots they filled that this process never mapped are unlinked. The dataset itself stays
        open for other loaders: close it with its own `close()` or `with` block. The loader
        can be iterated again (new workers; the metrics file goes on). Its iterations begun
        before end: their next `next()` raises StopIteration.
        """
        self._closes += 1  # an iteration of another thread ends at its next `next()`
        # This thread's suspended ones end now (workers, slots); another thread's generator is
        # never closed from here: it may be inside `next()` at this moment.
        self.suspended_iterations().end(same_thread_only=True)
        self._release()

    def _release(self) -> None:
        """Stop the workers and the metrics reporter (all that `__del__` may do: an iteration
        still alive holds this loader, so none is left to end then)."""
        self._stop_workers()
        reporter = getattr(self, "_reporter", None)
        if reporter is not None:
            reporter.stop()

    def _stop_workers(self, _finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
        current = getattr(self, "_current", None)
        for iterator in (getattr(self, "_iterator", None), current() if current else None):
            shutdown = getattr(iterator, "_shutdown_workers", None)
            if shutdown is not None:
                shutdown()
        self._iterator = None
        ring = getattr(self, "_ring", None)
        if ring is not None:
            ring.close()
        unlink = getattr(self.batch_sender, "unlink_unmapped", None)
        if unlink is not None and not _finalizing():  # a `WorkerRing`, its workers stopped now
            unlink()  # (at interpreter exit, an exit hook of `streaming.batch_ring` did it)

    def __enter__(self) -> StreamingDataLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self._release()
