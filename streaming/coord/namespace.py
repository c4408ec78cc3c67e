"""A handle on one dataset's node-local shared objects: attaching, factories and release.

Made by `streaming.coord.opening.open_namespace`. It pickles as names only; in a DataLoader worker
it registers that process on first use. Each registered process's hold is dropped by `close()`, or
on garbage collection or exit (see `streaming.coord.release`: a finalizer never waits for a lock);
the last live holder unlinks every block, lock file and record.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from streaming.coord.array import SharedArray, as_shape
from streaming.coord.barrier import BARRIER_SLOTS, Barrier
from streaming.coord.board import PlanBoard
from streaming.coord.claims import ShardClaims
from streaming.coord.job_agreement import refused_elsewhere
from streaming.coord.liveness import Identity, identity
from streaming.coord.lock import DEFAULT_LOCK_TIMEOUT, FileLock
from streaming.coord.names import block_name, lock_path
from streaming.coord.records import (
    Record,
    holder_entry,
    live_holders,
    node_wait_message,
    note_failed_start,
    read_record,
    registry_lock,
    write_record,
)
from streaming.coord.release import Release, drain_pending
from streaming.coord.scalar import SharedScalar
from streaming.coord.shm import ShmBlock, unlink_block
from streaming.coord.states import ShardState
from streaming.defaults import NODE_WAIT_TIMEOUT
from streaming.errors import CoordinationError

__all__ = ["Namespace"]

_REBUILD = ("A dataset unpickled (torch.save, pickle) after the dataset it was copied from was "
            "closed or dropped (or its process ended) cannot be used: its node state went with "
            "it, so build a new StreamingDataset with the same arguments, or keep the original "
            "open while copies are used.")

log = logging.getLogger(__name__)


class Namespace:
    """Handle on one dataset's shared objects; create with `open_namespace`."""

    def __init__(
        self,
        name: str,
        state_dir: str,
        locals_: Sequence[str],
        remotes: Sequence[str | None],
        *,
        timeout: float = DEFAULT_LOCK_TIMEOUT,
        registered: Identity | None = None,
    ) -> None:
        """Wrap a namespace; `registered` is this process's holder entry if already recorded."""
        self.name = name
        self.state_dir = state_dir
        self.locals = list(locals_)
        self.remotes = list(remotes)
        self.timeout = timeout
        self._pid: int | None = None
        self._owner: int | None = None  # a pickled copy's: the pid of the process it came from
        self._closed = False
        # Why the process that opened it closed it: copies (forked or pickled into workers)
        # carry it, so they refuse to start an epoch with that reason, not a missing namespace.
        self.closed_why: str | None = None
        self._release: Release | None = None
        self._finalizer: weakref.finalize | None = None
        self._batch: tuple[int, _Edit] | None = None  # (thread, edit) inside `batch()`
        if registered is not None:
            self._adopt(registered)

    # -- registration -------------------------------------------------------------------------

    def _adopt(self, ident: Identity) -> None:
        self._pid = ident[0]
        self._closed = False
        self._release = Release(self.state_dir, self.name, ident, self.timeout)
        self._finalizer = weakref.finalize(self, self._release)  # queues if it cannot go at once
        self._finalizer.atexit = False  # exit is `streaming.coord.release`'s (it may wait)

    def ensure_attached(self) -> None:
        """Register this process as a holder if it is not yet (first use in a worker)."""
        if self._pid == os.getpid():
            if self._closed:
                raise CoordinationError(f"Namespace {self.name} is closed in this process")
            return
        ident = identity()
        owner = self._pid if self._pid is not None else self._owner  # whose copy this is
        with registry_lock(self.state_dir, self.timeout):
            record = self._record()
            alive = live_holders(record)
            if not alive:
                raise CoordinationError(
                    f"Namespace {self.name} has no live holder: the dataset that created it was "
                    f"closed or its process died. " + _REBUILD
                )
            record.holders = [*alive, holder_entry(ident)]  # workers of past epochs drop out
            pids = {str(h[0]) for h in alive}
            record.owners = {pid: by for pid, by in record.owners.items() if pid in pids}
            if owner is not None:
                record.owners[str(ident[0])] = owner
            write_record(self.state_dir, record)
        self._adopt(ident)

    def _record(self) -> Record:
        record = read_record(self.state_dir, self.name)
        if record is None:
            raise CoordinationError(
                f"Namespace {self.name} does not exist (already released: the dataset was "
                f"closed, or every process that used it ended, before this one attached). "
                + _REBUILD)
        return record

    def holders(self) -> list[int]:
        """Pids of the live processes holding the namespace."""
        with registry_lock(self.state_dir, self.timeout):
            record = read_record(self.state_dir, self.name)
            return [h[0] for h in live_holders(record)] if record else []

    def copies_of(self, pid: int) -> list[int]:
        """Pids of the live holders that attached a copy of process `pid`'s handle (its
        DataLoader workers, however they were started)."""
        with registry_lock(self.state_dir, self.timeout):
            record = read_record(self.state_dir, self.name)
            if record is None:
                return []
            return [h[0] for h in live_holders(record) if record.owners.get(str(h[0])) == pid]

    def close(self, why: str | None = None) -> None:
        """Release this process's hold now (idempotent); the last holder removes everything.
        `why` is kept in `closed_why` (see there).

        Also a safe point for holds of dropped datasets whose finalizer had to queue them.
        """
        if self._finalizer is not None and self._release is not None \
                and self._pid == os.getpid():
            self._finalizer.detach()
            self._release.now()
            self._closed = True
            if why is not None and self.closed_why is None:
                self.closed_why = why
        drain_pending()

    @property
    def closed(self) -> bool:
        """Whether this process has released the namespace."""
        return self._pid == os.getpid() and self._closed

    # -- blocks --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Create or attach several objects under one hold of the registry lock and one write
        of the record: each alone costs a lock and an atomic file write (~0.15 ms in a temp dir
        on disk; a dataset opens about 15 objects). Other processes and threads wait for the
        whole batch; nested batches join the outer one."""
        self.ensure_attached()
        with self._editing(batch=True):
            yield

    @contextlib.contextmanager
    def _editing(self, batch: bool = False) -> Iterator[_Edit]:
        """The namespace's record under the registry lock (the batch's, inside `batch()`);
        written back once at the end if changed, also after an error, so every block created
        stays recorded and is removed at teardown."""
        thread = threading.get_ident()
        if self._batch is not None and self._batch[0] == thread:  # inside this thread's batch
            yield self._batch[1]
            return
        with registry_lock(self.state_dir, self.timeout):
            edit = _Edit(self._record())
            if batch:
                self._batch = (thread, edit)
            try:
                yield edit
            finally:
                if batch:
                    self._batch = None
                if edit.changed:
                    write_record(self.state_dir, edit.record)

    def _create_or_attach(self, obj: str, size: int, init: Callable[[ShmBlock], None], *,
                          reserve: bool = False) -> ShmBlock:
        """Attach the namespace's block `obj`, creating and initialising it if it is new."""
        self.ensure_attached()
        name = block_name(self.name, obj)
        with self._editing() as edit:
            if name in edit.record.blocks:
                return ShmBlock.attach(name, size)
            block = edit.fresh_block(name, size, reserve)
            init(block)
        return block

    def create_block(self, obj: str, size: int) -> ShmBlock:
        """Create a new block `obj` (replacing any old one) and record it; used by `PlanBoard`."""
        self.ensure_attached()
        name = block_name(self.name, obj)
        with self._editing() as edit:
            edit.forget(name)
            return edit.fresh_block(name, size)

    def drop_block(self, obj: str) -> None:
        """Unlink block `obj` and forget it (mappings elsewhere stay valid)."""
        self.ensure_attached()
        name = block_name(self.name, obj)
        with self._editing() as edit:
            unlink_block(name)
            edit.forget(name)

    # -- factories -----------------------------------------------------------------------------

    def array(
        self, obj: str, dtype: DTypeLike, shape: int | tuple[int, ...], *, fill: Any = 0
    ) -> SharedArray:
        """A shared array `obj`; its creator fills it with `fill`, later callers attach."""
        dtype, shape = np.dtype(dtype), as_shape(shape)
        count = math.prod(shape)

        def init(block: ShmBlock) -> None:
            if fill != 0 and count:
                np.frombuffer(block.buf, dtype, count)[:] = fill

        block = self._create_or_attach(obj, max(count * dtype.itemsize, 1), init,
                                       reserve=fill != 0 and count > 0)  # written whole now
        return SharedArray(block, dtype, shape, owner=self)

    def scalar(self, obj: str, dtype: DTypeLike = np.int64, *, fill: Any = 0) -> SharedScalar:
        """A shared single value `obj`."""
        return SharedScalar(self.array(obj, dtype, 1, fill=fill))

    def lock(self, obj: str = "main", timeout: float | None = None) -> FileLock:
        """A named cross-process lock of this namespace (file removed at teardown)."""
        return FileLock(lock_path(self.state_dir, self.name, obj), timeout or self.timeout)

    def note_failed_start(self, what: str) -> None:
        """Say that this process will never arrive at the namespace's barriers (a DataLoader
        worker whose start failed): its peers' waits fail with `what` instead of timing out."""
        note_failed_start(self.state_dir, self.name, identity(), what)

    def barrier(self, obj: str = "barrier", timeout: float = NODE_WAIT_TIMEOUT) -> Barrier:
        """A reusable barrier `obj` (see `Barrier.wait`)."""
        return Barrier(self.array(obj, np.int64, BARRIER_SLOTS), self.lock(obj), timeout,
                       stranded=functools.partial(_stranded_why, self.state_dir, self.name))

    def claims(
        self, num_shards: int, obj: str = "shard", *, initial: ShardState = ShardState.REMOTE
    ) -> ShardClaims:
        """Per-shard claims over `num_shards` shards; new states start at `initial`."""
        states = self.array(f"{obj}_states", np.uint8, num_shards, fill=int(initial))
        owners = self.array(f"{obj}_owners", np.int64, (num_shards, 2))
        return ShardClaims(states, owners, self.lock(obj))

    def board(self, obj: str = "plan") -> PlanBoard:
        """A `PlanBoard` publishing read-only int64 arrays (the epoch plan) under `obj`."""
        return PlanBoard(self, obj)

    # -- protocol ------------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state_dir": self.state_dir,
            "locals": self.locals,
            "remotes": self.remotes,
            "timeout": self.timeout,
            "closed_why": self.closed_why,
            "owner": self._pid if self._pid is not None else self._owner,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["name"],
            state["state_dir"],
            state["locals"],
            state["remotes"],
            timeout=state["timeout"],
        )
        self.closed_why = state.get("closed_why")
        self._owner = state.get("owner")

    def __enter__(self) -> Namespace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Namespace({self.name!r}, locals={self.locals!r})"


class _Edit:
    """A namespace record being changed under the registry lock."""

    def __init__(self, record: Record) -> None:
        self.record = record
        self.changed = False

    def fresh_block(self, name: str, size: int, reserve: bool = False) -> ShmBlock:
        """Create block `name` and record it (`ShmBlock.create`'s `reserve`)."""
        unlink_block(name)  # an unrecorded leftover (crash between create and record)
        block = ShmBlock.create(name, size, reserve)
        self.record.blocks.append(name)
        self.changed = True
        return block

    def forget(self, name: str) -> None:
        if name in self.record.blocks:
            self.record.blocks.remove(name)
            self.changed = True


def _stranded_why(state_dir: str, name: str) -> str | None:
    """Why a wait at one of the namespace's barriers cannot fill: a peer process that will never
    arrive (`node_wait_message`), or a rank that refused a dataset this one built."""
    return node_wait_message(state_dir, name) or refused_elsewhere()
