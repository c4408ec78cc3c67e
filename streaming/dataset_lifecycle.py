"""`Lifecycle`: how a `StreamingDataset` ends, kept apart from how it is built and read.

Closing stops this process's fetching ahead (waiting for the fetches in flight unless leaving on
an error), closes the shard mappings and releases the node-shared memory; an epoch started
afterwards is refused with a clear error (random access and sizes still work). The reference's
`on_exception` future callback is kept for code that attaches it to futures of its own.

A DataLoader worker process is set up once at its first epoch (`as_loader_worker`): it ends
with its parent, and with `bytes_as_views` its views leave it as bytes.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from streaming.coord.orphans import exit_with_parent, loader_done_event
from streaming.errors import DatasetClosedError, ReusedLocalError
from streaming.format.read_buffers import pickle_views_as_bytes
from streaming.latest_iteration import refresh_read_frames

if TYPE_CHECKING:
    from streaming.coord.namespace import Namespace
    from streaming.dataset_config import DatasetConfig
    from streaming.format.shard_readers import ShardReaders
    from streaming.latest_iteration import LatestIteration
    from streaming.prefetch import Prefetchers
    from streaming.stream import Stream

__all__ = ["Lifecycle", "as_loader_worker", "close_idle_own"]

_L = TypeVar("_L", bound="Lifecycle")

log = logging.getLogger(__name__)

_CLOSED = "close(), or the end of its `with` block"
_GAVE_WAY = ("by this process, when another StreamingDataset with the same arguments was built "
             "over the same directories (as a notebook cell run again does); two live datasets "
             "cannot share a cache: to use both (train and eval over one split, say), give each "
             "its own `local`")

# This process's open datasets by namespace name (see `close_idle_own`).
_own: weakref.WeakValueDictionary[str, Lifecycle] = weakref.WeakValueDictionary()


def close_idle_own(name: str, config: DatasetConfig, streams: Sequence[Stream]) -> bool:
    """Close this process's dataset of namespace `name` if it was built with the same
    arguments (`_ss_config`, `streams`) and nothing uses it; True if it did.

    A notebook cell run again builds the dataset it built last time, which is still bound to
    the cell's variable; Lightning's `reload_dataloaders_every_n_epochs` builds the dataset
    again while it holds the last epoch's, whose loop it left after `len(loader)` batches.
    Such a dataset is closed, with a warning, so the new one takes its place: its loaders'
    iterations left part-way (suspended, begun by this thread) end as a new `iter()` ends the
    one before, and their workers stop. One that another thread iterates, one a loop still
    running consumes (the new one is built inside that loop's body: ending it would end the
    loop early, silently), or one built with other arguments, still makes the new one fail
    ("Reused local directory"): two live datasets must not share a cache.

    Raises:
        ReusedLocalError: saying so, when a running loop consumes the earlier one.
    """
    refresh_read_frames()  # a loader the caller deleted since a check read its locals: gone
    dataset = _own.get(name)
    if dataset is None or dataset._ss_namespace.closed \
            or dataset._ss_config != config or _arguments(dataset.streams) != _arguments(streams):
        return False
    loaders = list(getattr(dataset, "_loaders", ()))
    left = [dataset._ss_latest.as_suspended(),
            *(loader.suspended_iterations() for loader in loaders)]
    if any(iterations.in_running_loop() for iterations in left):
        raise ReusedLocalError(
            f"Reused local directory: {dataset._ss_namespace.locals}. This process's earlier "
            "StreamingDataset over it (same arguments) is being iterated by a loop that is "
            "still running: this one is built inside it. Give this one another `local` "
            "directory, or build it outside the loop.", True, name)
    if not all(iterations.endable() for iterations in left):
        return False
    # Held by DataLoader workers of this process that are not our loaders' (a torch loader's
    # persistent ones, which only it can stop): refused, before anything of it is ended. Held
    # by peer ranks rebuilding theirs in step (Lightning DDP reloading its dataloaders): ours
    # goes, and the new one waits for theirs.
    ours = _worker_pids(loaders)
    workers = [pid for pid in dataset._ss_namespace.copies_of(os.getpid()) if pid not in ours]
    if workers:
        raise ReusedLocalError(
            f"Reused local directory: {dataset._ss_namespace.locals}. This process's earlier "
            f"StreamingDataset over it (same arguments) is still held by DataLoader workers "
            f"of this process (pids {workers}): persistent workers of a torch DataLoader (or "
            "of one accelerate or a Trainer prepared) keep their dataset until that loader is "
            "gone. Drop every reference to the old loader (`del loader`) before building the "
            "new dataset, or use StreamingDataLoader, whose workers are stopped for you.",
            True, name)
    ended = any(iterations.iterations for iterations in left)
    # An iteration ended here may yet be resumed (Lightning's training fetcher around a
    # validation loop that built the twin): it then raises this instead of ending silently.
    why = (f"This iteration of a StreamingDataset over {dataset._ss_namespace.locals} was ended "
           "part-way when another StreamingDataset with the same arguments was built over the "
           "same directories, and then resumed: its epoch cannot go on. Two live datasets "
           "cannot share a cache: to use both at once (train and eval over one split, say), "
           "give each its own `local`; to replace one, stop iterating it first.")
    dataset._ss_ended_why_text = (threading.get_ident(), why)
    try:
        for iterations in left:
            iterations.end(keep_unstarted=True)
    finally:  # (each took the reason as it ended; a later `break` ends as usual)
        dataset._ss_ended_why_text = None
    for loader in loaders:  # persistent workers between epochs: stopped
        loader._stop_workers()
    log.warning("Closed this process's earlier StreamingDataset over %s (%s) for the new one "
                "over the same directories; close datasets you are done with (close(), or a "
                "with block). To use both, give each its own `local`: the earlier one cannot "
                "start another epoch.", dataset._ss_namespace.locals,
                "its suspended iteration is ended: resumed, it raises" if ended
                else "nothing was using it")
    dataset._close(_GAVE_WAY)
    return True


def _worker_pids(loaders: Sequence[Any]) -> set[int]:
    """The pids of the workers of these `StreamingDataLoader`s (stopped here when their
    dataset gives way)."""
    pids: set[int] = set()
    for loader in loaders:
        current = getattr(loader, "_current", None)
        for iterator in (getattr(loader, "_iterator", None), current() if current else None):
            pids.update(w.pid for w in getattr(iterator, "_workers", None) or () if w.pid)
    return pids


def as_loader_worker(views_as_bytes: bool) -> None:
    """Set up this DataLoader worker process (idempotent): it ends when its parent is gone or
    its loader shut down without telling it (`streaming.coord.orphans`), and with
    `views_as_bytes` the memoryviews it sends leave as bytes (a worker's queue cannot pickle
    views)."""
    exit_with_parent(done=loader_done_event())
    if views_as_bytes:
        pickle_views_as_bytes()


def _arguments(streams: Sequence[Stream]) -> list[tuple[Any, ...]]:
    return [(s.remote, s.local, s.split, s.given_weights) for s in streams]


class _Loaders(weakref.WeakSet[Any]):
    """The loaders over a dataset; a copy pickled into a worker starts empty."""

    def __reduce__(self) -> tuple[type[_Loaders], tuple[()]]:
        return type(self), ()


class Lifecycle:
    """Mixed into `StreamingDataset`, which sets these six attributes."""

    _prefetchers: Prefetchers
    _ss_namespace: Namespace
    _ss_latest: LatestIteration
    _ss_config: DatasetConfig
    streams: list[Stream]
    shards: ShardReaders

    # Set by `close_idle_own` while it ends this dataset's suspended iterations: its thread
    # (the one their `close()` runs in) and why.
    _ss_ended_why_text: tuple[int, str] | None = None

    def _ss_ended_why(self) -> str | None:
        """Why an iteration of this dataset closed now is ended, if `close_idle_own` ends it
        (another thread closing its own iteration meanwhile just ends it)."""
        ending = self._ss_ended_why_text
        return ending[1] if ending is not None and ending[0] == threading.get_ident() else None

    def _register_own(self) -> None:
        """Be found by `close_idle_own` (by a new dataset over the same directories)."""
        _own[self._ss_namespace.name] = self
        self._loaders = _Loaders()

    def _track_loader(self, loader: Any) -> None:
        """A `StreamingDataLoader` over this dataset: `close_idle_own` looks at it too."""
        loaders = getattr(self, "_loaders", None)
        if loaders is not None:
            loaders.add(loader)

    def close(self) -> None:
        """Release shared memory and open shard mappings now (also done on garbage collection).

        Iterators still open stop fetching ahead: fetches in flight are waited for (up to
        the longest `download_timeout`), so nothing of this process writes into the cache once
        `close()` returns. Such an iterator can still be read on; it then fetches each shard as
        it needs it. A `with` block left by an exception (a Ctrl-C) does not wait: the fetches
        in flight finish on their own, each file still appearing whole or not at all.
        """
        self._close(_CLOSED)

    def _close(self, why: str) -> None:
        """`close`, saying `why` to whoever tries an epoch after (here, or in a worker's copy)."""
        try:
            self._prefetchers.stop(max(stream.download_timeout for stream in self.streams))
            for shard in self.shards.built():
                shard.close()
        finally:  # even if a signal handler raises into us (torch's, on a killed worker)
            self._ss_namespace.close(why)

    def _ensure_open(self) -> None:
        """Refuse to start an epoch once this process closed the dataset.

        Raises:
            DatasetClosedError: it did.
        """
        namespace = self._ss_namespace
        if namespace.closed or namespace.closed_why is not None:
            raise DatasetClosedError(
                f"This StreamingDataset was closed ({namespace.closed_why or _CLOSED}), so it "
                "cannot start an epoch; build a new StreamingDataset over the same directories "
                "to read again.")

    def __enter__(self: _L) -> _L:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: Any) -> None:
        if kind is not None:  # leaving on an error: stop fetching ahead without waiting
            self._prefetchers.stop(0.0)
        self.close()

    def on_exception(self, future: Future[Any]) -> None:
        """Re-raise the exception of a failed `future` (the reference's done-callback for its
        background threads; ours report their failures to the reader instead)."""
        error = future.exception()
        if error is not None:
            raise error
