"""Where finished shard files go: the writer's output sink.

A writer always writes into a local directory; a sink then hands each finished file onward.
`LocalSink` covers plain local output and a second local directory acting as the "remote";
URL remotes are served by `streaming.storage.sink:RemoteSink` (imported on first use, same
constructor). The protocol every sink follows:

- ``put(local_path, relpath)``: a finished file; a copying sink sends it in the background and
  deletes the local copy afterwards when ``keep_local`` is False.
- ``wait()``: block until every put so far has landed; raise if any failed (the sink stays open).
- ``finish()``: wait, then release threads; raises the reference's
  ``Exception('One of the threads failed. Check other traceback for more details.')`` if a put
  failed. ``abort()``: cancel what has not started, never raise.
- attributes ``local`` and ``remote`` (None when nothing is copied anywhere) and ``failed``.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

__all__ = ["LocalSink", "Sink", "SinkError", "open_sink"]

logger = logging.getLogger(__name__)

_THREAD_FAILED = "One of the threads failed. Check other traceback for more details."
_BAD_OUT = (
    "Invalid `out` argument. It is either a string of local/remote directory or a list of two "
    "strings with [local, remote]."
)


class SinkError(Exception):
    """A background put failed; the message is the reference's, the cause is chained."""

    def __init__(self) -> None:
        super().__init__(_THREAD_FAILED)


class Sink(Protocol):
    local: str
    remote: str | None

    @property
    def failed(self) -> bool: ...

    def put(self, local_path: str, relpath: str) -> None: ...

    def wait(self) -> None: ...

    def finish(self) -> None: ...

    def abort(self) -> None: ...


class LocalSink:
    """Keeps output in `local`, optionally copying every finished file into another directory.

    Args:
        local: the directory the writer writes into (must exist).
        remote: a second local directory to copy finished files into, or None.
        keep_local: with a remote, whether to keep the local copy of each file.
        progress_bar: accepted for signature parity; local copies draw no bars.
        max_workers: copy threads (ThreadPoolExecutor's default when None).
        retry: attempts per copy.
    """

    def __init__(self, local: str, remote: str | None = None, *, keep_local: bool = False,
                 progress_bar: bool = False, max_workers: int | None = None,
                 retry: int = 2) -> None:
        if remote is not None:
            remote = os.path.expanduser(remote)
            if os.path.realpath(remote) == os.path.realpath(local):
                remote = None  # copying a directory onto itself would only risk deleting it
        self.local = local
        self.remote = remote
        self.keep_local = keep_local
        self.progress_bar = progress_bar
        self.retry = max(1, int(retry))
        self._max_workers = max_workers
        self._executor: ThreadPoolExecutor | None = None
        self._futures: list[Future] = []
        self._error: BaseException | None = None
        self._failed = threading.Event()
        if remote is not None:
            os.makedirs(remote, exist_ok=True)

    @property
    def failed(self) -> bool:
        """Whether any put has failed so far (cheap: a flag set by the failing thread)."""
        return self._failed.is_set()

    @property
    def executor(self) -> ThreadPoolExecutor | None:
        return self._executor

    def put(self, local_path: str, relpath: str) -> None:
        if self.remote is None:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._max_workers, "shardstream-sink")
        self._futures.append(self._executor.submit(self._copy, local_path, relpath))

    def _copy(self, local_path: str, relpath: str) -> None:
        try:
            self._send(local_path, relpath)
        except BaseException:
            self._failed.set()
            raise

    def _send(self, local_path: str, relpath: str) -> None:
        assert self.remote is not None  # put() only submits with a remote
        target = os.path.join(self.remote, relpath)
        for attempt in range(self.retry):
            try:
                os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                tmp = f"{target}.tmp.{os.getpid()}"
                shutil.copyfile(local_path, tmp)
                os.replace(tmp, target)
                break
            except OSError:
                if attempt + 1 == self.retry:
                    raise
                time.sleep(0.05 * 2**attempt)
        if not self.keep_local:
            os.remove(local_path)

    def wait(self) -> None:
        futures, self._futures = self._futures, []
        for future in futures:
            error = future.exception()
            if error is not None and self._error is None:
                logger.error("Copying a shard file failed: %s", error)
                self._error = error
        if self._error is not None:
            raise SinkError() from self._error

    def finish(self) -> None:
        try:
            self.wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None

    def abort(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        self._futures = []


def _split_out(out: Any) -> tuple[str | None, str | None]:
    """Return ``(local or None for a temp dir, remote or None)`` for the writer's `out`."""
    if isinstance(out, str):
        if urllib.parse.urlparse(out).scheme:
            return None, out
        return out, None
    if (isinstance(out, (tuple, list)) and len(out) == 2
            and all(isinstance(part, str) for part in out)):
        return out[0], out[1]
    raise ValueError(_BAD_OUT)


def _sink_class(remote: str | None) -> Any:
    """`LocalSink` for no remote or a plain directory, else the storage layer's `RemoteSink`."""
    if remote is None or not urllib.parse.urlparse(remote).scheme:
        return LocalSink
    try:
        module = importlib.import_module("streaming.storage.sink")
    except ModuleNotFoundError as err:
        if err.name not in ("streaming.storage", "streaming.storage.sink"):
            raise
        raise NotImplementedError(
            f"Writing to remote output {remote!r} requires the storage layer "
            "(streaming.storage.sink), which is not available."
        ) from err
    return module.RemoteSink


def _prepare_local(local: str, exist_ok: bool) -> None:
    """Apply the reference's `exist_ok` rules to the local directory, then create it."""
    if os.path.exists(local):
        if exist_ok:
            logger.warning(
                "Directory %s exists and is not empty; exist_ok is set to True so will remove "
                "contents.", local
            )
            shutil.rmtree(local)
        elif os.listdir(local):
            raise FileExistsError(f"Directory is not empty: {local}")
    os.makedirs(local, exist_ok=True)


def open_sink(out: Any, *, keep_local: bool = False, progress_bar: bool = False,
              max_workers: int | None = None, retry: int = 2,
              exist_ok: bool = False) -> tuple[str, Sink]:
    """Resolve a writer's `out` into the local directory to write and the sink to hand files to.

    Args:
        out: a local directory, a remote URL (a temp directory becomes the local side), or a
            ``(local, remote)`` pair.
        keep_local: with a remote, keep local copies after they are sent.
        progress_bar: ask the remote sink for progress bars.
        max_workers: background transfer threads.
        retry: attempts per file.
        exist_ok: delete an existing local directory first instead of refusing a non-empty one.

    Raises:
        ValueError: `out` has the wrong shape.
        FileExistsError: ``Directory is not empty: <dir>`` when not `exist_ok`.
        NotImplementedError: a URL remote while the storage layer is missing.
    """
    local, remote = _split_out(out)
    sink_class = _sink_class(remote)
    if local is None:
        local = created = tempfile.mkdtemp()
    else:
        local = os.path.expanduser(local)
        created = None if os.path.exists(local) else local
        _prepare_local(local, exist_ok)
    try:
        sink = sink_class(local, remote, keep_local=keep_local, progress_bar=progress_bar,
                          max_workers=max_workers, retry=retry)
    except BaseException:
        if created:  # leave no directory behind that only this failed call made
            shutil.rmtree(created, ignore_errors=True)
        raise
    return local, sink
