"""Where a writer's finished files go: a local directory, and optionally a copy elsewhere.

A writer always writes into a local directory (`open_sink` resolves its `out` into that
directory and a `Sink`). Each finished file handed to `Sink.put` is sent in the background to
the destination store (another local directory is a `LocalStore`; URLs any writable store) with
`transfer.push`'s retries, and deleted locally afterwards unless `keep_local`. The sink knows
nothing about datasets: what must land before what (the index after its shards) is the caller's
to order with `wait()`. Bytes sent are reported through an optional `progress(n)` callback.

- ``put(local_path, relpath)``: a finished file, sent in the background.
- ``wait()``: block until every put so far has landed; raise `SinkError` if any failed.
- ``finish()``: wait, then release the threads. ``abort()``: cancel what has not started.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, wait as wait_futures
from typing import Any

from streaming.errors import StreamingError
from streaming.storage.base import Store
from streaming.storage.daemon_pool import DaemonPool
from streaming.storage.schemes import get_store_spec, open_store, scheme_of
from streaming.storage.transfer import push
from streaming.storage.urls import redact, split_out

__all__ = ["Sink", "SinkError", "open_sink"]

logger = logging.getLogger(__name__)

_THREAD_FAILED = "One of the threads failed. Check other traceback for more details."


#: Seconds `Sink.wait` waits before it says what it is waiting for.
_QUIET_WAIT = 5.0


class SinkError(StreamingError):
    """A background put failed; the message is the reference's, the cause is chained."""

    def __init__(self) -> None:
        super().__init__(_THREAD_FAILED)


class Sink:
    """Sends a writer's finished files from `local` to `remote` in the background.

    Args:
        local: the directory the writer writes into (must exist).
        remote: where to copy finished files: a URL, another local directory, or None to keep
            them only in `local`.
        keep_local: with a remote, keep each local file after it was sent.
        max_workers: transfer threads (ThreadPoolExecutor's default when None); daemon
            threads, so uploads abandoned by `abort` never hold the process open.
        retry: attempts per file.
        progress: called with the bytes of each file once it landed.
        published: the file whose presence at the remote means a dataset is there already
            (a warning says what writing over it does).
        store_options: passed to `open_store` for the remote.

    Raises:
        ValueError: ``Invalid Cloud provider prefix: <scheme>.`` for an unknown scheme, or a
            read-only remote.
        ObjectNotFoundError: the remote's bucket does not exist (`Store.check_container`).
        AccessDeniedError: an S3 remote and no AWS credentials anywhere.
    """

    def __init__(self, local: str, remote: str | None = None, *, keep_local: bool = False,
                 max_workers: int | None = None, retry: int = 2,
                 progress: Callable[[int], None] | None = None, published: str | None = None,
                 **store_options: Any) -> None:
        self.local = local
        self.remote = _destination(local, remote)
        self.keep_local = keep_local
        self.retry = max(1, int(retry))
        self.progress = progress
        self.published = published
        self.store: Store | None = None
        if self.remote is not None:
            if get_store_spec(scheme_of(self.remote)) is None:
                raise ValueError(f"Invalid Cloud provider prefix: {scheme_of(self.remote)}.")
            self.store = open_store(self.remote, **store_options)
            if not self.store.supports_writes:
                raise ValueError(f"Cannot write to {redact(self.remote)}: "
                                 f"{type(self.store).__name__} is read-only")
            self.store.check_container()  # a misspelt bucket fails now, not after the work
            if published is not None and self._already_published(published):
                logger.warning(
                    "%s already holds a dataset (%s). Until this writer publishes its own, "
                    "readers get the old %s over a mix of old and new files, and old files this "
                    "one does not overwrite stay; write to a new location to avoid both.",
                    redact(self.remote), published, published)
        self._max_workers = max_workers
        self._executor: DaemonPool | None = None
        self._futures: list[Future[None]] = []
        self._error: BaseException | None = None  # the first failure, kept for every raise
        self._error_lock = threading.Lock()
        self._failed = threading.Event()
        self.temporary = False  # `local` is a directory of ours (`open_sink`), not the user's

    def _already_published(self, published: str) -> bool:
        """Whether the remote holds `published` already; a server unreachable now says no
        (as `check_container` lets it pass: the uploads retry, and fail naming it)."""
        assert self.store is not None
        try:
            return self.store.exists(published)
        except (ConnectionError, TimeoutError) as err:  # unreachable, dropped, stalled
            logger.warning("Could not check whether %s already holds a dataset: %s",
                           redact(self.remote or ""), err)
            return False

    @property
    def failed(self) -> bool:
        """Whether any put has failed so far (cheap: a flag set by the failing thread)."""
        return self._failed.is_set()

    @property
    def error(self) -> BaseException | None:
        """The first put that failed, if any (what `SinkError` is chained to)."""
        return self._error

    @property
    def executor(self) -> DaemonPool | None:
        return self._executor

    def put(self, local_path: str, relpath: str) -> None:
        """Send `local_path` as `relpath` of the remote, in the background (no-op without one)."""
        if self.store is None:
            return
        if self._executor is None:
            self._executor = DaemonPool(self._max_workers, "shardstream-sink")
        self._futures.append(self._executor.submit(self._send, local_path, relpath))

    def _send(self, local_path: str, relpath: str) -> None:
        assert self.store is not None  # put() only submits with a remote
        if self._failed.is_set():  # the dataset will not be published: spare the remote
            return
        try:
            result = push(self.store, local_path, relpath.replace(os.sep, "/"),
                          retries=self.retry)
            if self.progress is not None:
                self.progress(result.bytes)
            if not self.keep_local:
                os.remove(local_path)
            elif relpath == self.published:
                self._stamp_as_sent(local_path, relpath)
        except BaseException as err:
            with self._error_lock:  # said once, when it happens (not after the queue drains)
                if self._error is None:
                    logger.error("Sending a file to %s failed: %s", redact(self.remote or ""), err)
                    self._error = err
            self._failed.set()
            raise

    def _stamp_as_sent(self, local_path: str, relpath: str) -> None:
        """Give the local copy of the published file the remote's time for it (by the server's
        clock): a cache that this local directory becomes (`StreamingDataset(remote, local)`)
        then reads the two as the same, not the remote's as written again since (best
        effort)."""
        assert self.store is not None
        try:
            when = self.store.modified(relpath.replace(os.sep, "/"))
            if when is not None:
                os.utime(local_path, (when, when))
        except Exception as err:  # noqa: BLE001 (a cache judges it anyway, at worst fetching)
            logger.debug("Could not stamp %s with the remote's time: %s", local_path, err)

    def wait(self) -> None:
        """Block until every put so far has landed.

        Raises:
            SinkError: a put failed (the first failure is chained); the puts not started yet
                are cancelled (a dataset with a missing file is never published), so a remote
                that stopped answering costs one upload's timeout, not one per queued file.
        """
        futures, self._futures = self._futures, []
        _, pending = wait_futures(futures, timeout=_QUIET_WAIT, return_when=FIRST_EXCEPTION)
        if pending and self._error is None:  # a slow or stalled link: say what it waits for
            logger.warning("Waiting for %d file(s) still being sent to %s before the index is "
                           "published (Ctrl-C stops without publishing).", len(pending),
                           redact(self.remote or ""))
            wait_futures(pending, return_when=FIRST_EXCEPTION)
        if self._error is not None:
            for future in futures:
                future.cancel()
            raise SinkError() from self._error

    def finish(self) -> None:
        """`wait`, then release the threads."""
        try:
            self.wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None

    def abort(self) -> None:
        """Cancel what has not started; never raises."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        self._futures = []


def _destination(local: str, remote: str | None) -> str | None:
    """`remote`, unless it is `local` itself (copying a directory onto itself risks deleting
    it)."""
    if remote is None or scheme_of(remote) not in ("", "file"):
        return remote
    if os.path.realpath(os.path.expanduser(remote)) == os.path.realpath(local):
        return None
    return remote


def _prepare_local(local: str, exist_ok: bool) -> None:
    """Apply the reference's `exist_ok` rules to the local directory, then create it."""
    if os.path.isdir(local) and os.listdir(local):
        if exist_ok:
            logger.warning(
                "Directory %s exists and is not empty; exist_ok is set to True so will remove "
                "contents.", local
            )
            shutil.rmtree(local)
        else:
            raise FileExistsError(f"Directory is not empty: {local}")
    os.makedirs(local, exist_ok=True)


def open_sink(out: Any, *, keep_local: bool = False, max_workers: int | None = None,
              retry: int = 2, exist_ok: bool = False,
              progress: Callable[[int], None] | None = None,
              published: str | None = None) -> tuple[str, Sink]:
    """Resolve a writer's `out` into the local directory to write and the sink to hand files to.

    Args:
        out: a local directory, a remote URL (a temp directory becomes the local side), or a
            ``(local, remote)`` pair (see `streaming.storage.urls.split_out`).
        keep_local: with a remote, keep local copies after they are sent.
        max_workers: background transfer threads.
        retry: attempts per file.
        exist_ok: delete an existing local directory first instead of refusing a non-empty one.
        progress: called with the bytes of each file once it landed.
        published: see `Sink`.

    Raises:
        ValueError: `out` has the wrong shape, or names an unknown or read-only remote;
            `max_workers` below 1 (with or without a remote, as the reference's pool).
        FileExistsError: ``Directory is not empty: <dir>`` when not `exist_ok`.
        ObjectNotFoundError: the remote's bucket does not exist.
        AccessDeniedError: an S3 remote and no AWS credentials anywhere.
    """
    if max_workers is not None and not max_workers > 0:
        raise ValueError(f"max_workers must be greater than 0, got {max_workers!r}.")
    given, remote = split_out(out)
    created: str | None
    if given is None:
        local = created = tempfile.mkdtemp()
    else:
        local = os.path.expanduser(given)
        created = None if os.path.exists(local) else local
        _prepare_local(local, exist_ok)
    try:
        sink = Sink(local, remote, keep_local=keep_local, max_workers=max_workers, retry=retry,
                    progress=progress, published=published)
    except BaseException:
        if created:  # leave no directory behind that only this failed call made
            shutil.rmtree(created, ignore_errors=True)
        raise
    sink.temporary = given is None
    return local, sink
