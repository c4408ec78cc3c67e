"""Moving whole files between a `Store` and local disk, safely: the one place with retry policy.

`fetch` downloads to a unique temp name beside the target, checks size and digest, and renames;
on any failure the temp file is gone, so a later run never trusts half a shard. `read` returns a
small object's bytes (an index), `push` uploads. All retry transient errors with exponential
backoff and jitter, never missing objects, denied access or a digest mismatch, bound every attempt
by its timeout even when the server stalls, and finally fail with a `TransferError` naming the
URL. They return facts (bytes, seconds, attempts); callers decide what those mean for caches.
"""

from __future__ import annotations

import contextvars
import errno
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from streaming.atomic import discard, replacing
from streaming.defaults import DEFAULT_TIMEOUT
from streaming.errors import (
    HashMismatchError,
    RemoteUnreachableError,
    StreamingError,
    TransferStalledError,
    first_line,
)
from streaming.hashing import hash_file
from streaming.retries import backoff_pause, call_with_retries as retrying
from streaming.storage._forksafe import abandon
from streaming.storage.base import ProgressFn, Store
from streaming.storage.patience import patiently
from streaming.storage.user_code_errors import as_theirs_too

__all__ = ["TransferResult", "TransferError", "TransferTimeoutError", "IncompleteTransferError",
           "OversizedObjectError",
           "fetch", "read", "read_stamped", "read_range", "read_tail", "push", "is_retryable",
           "call_with_retries"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Errors that another attempt cannot fix: the object is not there, we may not read it, the data
# itself is wrong, or the call was malformed.
_FATAL: tuple[type[BaseException], ...] = (
    FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError,
    HashMismatchError, ValueError, TypeError, NotImplementedError, ImportError,
)


class IncompleteTransferError(StreamingError, ConnectionError):
    """Fewer (or more) bytes arrived than the caller expected; usually a cut connection."""


class OversizedObjectError(StreamingError, ValueError):
    """The object holds more bytes than the caller was told it has (its index entry): stopped
    as soon as that shows, and not retried (the object itself is not what the index says)."""


class TransferError(StreamingError, ConnectionError):
    """Every attempt failed with a transient error; names the URL, chains the last error."""


class TransferTimeoutError(TransferError, TimeoutError):
    """Every attempt failed and the last one ran out of time."""


def _gave_up(what: str, attempts: int, err: Exception) -> TransferError:
    kind = TransferTimeoutError if isinstance(err, TimeoutError) else TransferError
    plural = "s" if attempts > 1 else ""
    return as_theirs_too(kind(f"{what} failed after {attempts} attempt{plural}: "
                              f"{first_line(err)}"), err)


@dataclass(frozen=True)
class TransferResult:
    """What one `fetch` or `push` did."""

    bytes: int  # size of the file moved (the last, successful attempt)
    seconds: float  # wall time over all attempts, backoff included
    attempts: int  # 1 when the first attempt succeeded


# A local disk that is full, over quota or read-only: another attempt writes to the same disk.
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def is_retryable(err: BaseException) -> bool:
    """Whether another attempt might succeed (connection and server trouble, timeouts)."""
    if isinstance(err, OSError) and err.errno in _DISK_ERRNOS:
        return False
    return isinstance(err, Exception) and not isinstance(err, _FATAL)


def _connection_trouble(err: BaseException) -> bool:
    """Dropped mid-body, stalled, short body: a new connection at once is the remedy.

    Not a refused connection or an unreachable server: the server is down (restarting, a load
    balancer between two backends), and only time helps. Retried at once, both default attempts
    fell inside a half-second outage that the reference, pausing first, rode out.
    """
    if isinstance(err, (RemoteUnreachableError, ConnectionRefusedError)):
        return False
    return isinstance(err, (ConnectionError, TimeoutError))


def _dropped(err: BaseException) -> bool:
    """A connection cut or reset: it failed fast, and a new one usually works at once. Not a
    stall (it took the stall timeout to show: trying it again for free would double the wait
    on a dead server), nor a body of the wrong size on a connection that held (a truncated
    object stays truncated)."""
    return _connection_trouble(err) and not isinstance(err, (TimeoutError,
                                                              IncompleteTransferError))


def call_with_retries(func: Callable[[], T], *, retries: int, backoff: float = 1.0,
                      max_jitter: float = 0.5, what: str = "transfer") -> tuple[T, int]:
    """Run `func` up to `retries` times in total; return its result and the attempts used.

    A fatal error (missing object, refused access, wrong digest...) is re-raised as it is, at
    once. A connection cut or reset is tried again at once on a new one, once per call and
    without using up an attempt (an HTTP client's own retry: the reference's boto3 made up to
    four more); a stalled one is retried at once the first time (it usually works again on a
    new connection: waiting would not help). Every other retry waits the backoff, as other
    transient errors (a refused connection among them) do, ``backoff * 2**i + uniform(0,
    max_jitter)`` seconds as the reference's `retry`, so a server being restarted, or a load
    balancer resetting connections for a second, is still ridden out. With ``retries=1``
    nothing is tried twice.

    Raises:
        ValueError: ``num_attempts must be at-least 1`` when `retries` < 1 (reference message).
        TransferError: ``<what> failed after N attempts: <last error>`` (a
            `TransferTimeoutError` when the last attempt timed out), chaining the last error.
    """
    if not isinstance(retries, int) or retries < 1:  # the reference's words, then ours
        raise ValueError(f"num_attempts must be at-least 1: `retries` counts the attempts "
                         f"(1 tries once, without retrying), got {retries!r}.")
    later = backoff_pause(backoff, max_jitter)
    reconnected = retries < 2  # the free reconnect, once per call (never with one attempt)
    stalled = False  # then later attempts wait longer for each byte (`storage.patience`)

    def once() -> T:
        nonlocal stalled
        try:
            if not stalled:
                return func()
            with patiently():
                return func()
        except TransferStalledError:
            stalled = True
            raise

    def attempt() -> T:
        nonlocal reconnected
        try:
            return once()
        except Exception as err:
            if reconnected or not _dropped(err):
                raise
            reconnected = True
            logger.warning("%s: connection dropped, retrying at once on a new one (not "
                           "counted as an attempt): %s", what, first_line(err))
            return once()

    def pause(attempt: int, err: Exception) -> float:
        if _connection_trouble(err) and not _dropped(err):  # stalled
            return 0.0 if attempt == 1 else later(attempt - 1, err)
        return later(attempt, err)

    def log_retry(attempt: int, err: Exception, seconds: float) -> None:
        logger.warning("%s failed (attempt %d of %d), retrying in %.2f s: %s", what, attempt,
                       retries, seconds, first_line(err))

    try:
        return retrying(attempt, attempts=retries, retry_if=is_retryable, pause=pause,
                        on_retry=log_retry)
    except Exception as err:
        if retries < 1 or not is_retryable(err):
            raise
        raise _gave_up(what, retries, err) from err


def _within(timeout: float | None, call: Callable[[], T], what: str,
            abandoned: Callable[[], object] = lambda: None) -> T:
    """`call()`, or `TimeoutError` once `timeout` seconds pass, even if it is blocked.

    A client blocked on a stalled socket cannot be interrupted from Python, so the call runs in a
    daemon thread that is left behind on timeout; it ends at its next write (the deadline check)
    or its client's read timeout, and then runs `abandoned` to clean up after itself.
    """
    if not timeout:
        return call()
    box: dict[str, Any] = {}
    gave_up = threading.Event()
    context = contextvars.copy_context()  # the attempt's patience (`storage.patience`)

    def run() -> None:
        try:
            box["value"] = context.run(call)
        except BaseException as err:  # noqa: BLE001 (handed to the waiting thread)
            box["error"] = err
        if gave_up.is_set():
            abandoned()

    worker = threading.Thread(target=run, name="shardstream-transfer", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        gave_up.set()
        abandon(worker.ident)  # a helper process serving it (forked workers) stops now
        raise TimeoutError(f"{what} took longer than {timeout} s")
    if "error" in box:
        error = box.pop("error")  # not left in `box`: our frame, in its traceback, holds `box`
        try:
            raise error
        finally:
            del error  # nor in this frame's locals (a cycle keeping the caller's objects alive)
    return box["value"]


def _fetch_once(store: Store, remote_path: str, local_path: str, timeout: float | None,
                hash_algo: str | None, expected_hash: str | None, expected_size: int | None,
                progress: ProgressFn | None) -> int:
    deadline = time.monotonic() + timeout if timeout else None
    url = store.url_for(remote_path)
    if expected_size is not None:
        progress = _stop_past(expected_size, url, progress)
    with replacing(local_path) as tmp:
        count = _within(
            timeout if store.can_stall else None,
            lambda: store.download(remote_path, tmp, progress=progress, deadline=deadline),
            f"Downloading {url}", abandoned=lambda: discard(tmp))
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"Downloading {url} took longer than {timeout} s")
        if expected_size is not None and count != expected_size:
            raise IncompleteTransferError(
                f"Downloaded {count} bytes of {url}, expected {expected_size}")
        if hash_algo and expected_hash is not None:
            actual = hash_file(hash_algo, tmp)
            if actual != expected_hash.lower():  # hex digests: an index may write them upper
                raise HashMismatchError(
                    f"Checksum failure: {local_path} ({hash_algo} of {url} is {actual}, "
                    f"expected {expected_hash})")
    return count


def _stop_past(limit: int, url: str, progress: ProgressFn | None) -> ProgressFn:
    """`progress`, raising `OversizedObjectError` once more than `limit` bytes arrived: a server
    sending gigabytes for a shard its index gives a few KB was read to the end, twice."""
    seen = 0

    def report(count: int) -> None:
        nonlocal seen
        seen += count
        if seen > limit:
            raise OversizedObjectError(
                f"{url} holds more than the {limit:,} bytes its index entry gives: stopped "
                f"after {seen:,}. The dataset changed since its index was written, or the "
                f"index is wrong.")
        if progress is not None:
            progress(count)
    return report


def fetch(store: Store, remote_path: str, local_path: str, *, retries: int = 2,
          timeout: float | None = DEFAULT_TIMEOUT, hash_algo: str | None = None,
          expected_hash: str | None = None, expected_size: int | None = None,
          progress: ProgressFn | None = None, backoff: float = 1.0) -> TransferResult:
    """Download `remote_path` of `store` to `local_path`, atomically and verified.

    The file appears under `local_path` only when complete (and matching `expected_size` /
    `expected_hash` when given); an existing file there is replaced. Parent directories are
    created.

    Args:
        store: where the object lives.
        remote_path: the object's path relative to the store's root.
        local_path: the destination file.
        retries: total attempts (the reference's `download_retry`), at least 1.
        timeout: seconds allowed per attempt; None or 0 for no limit.
        hash_algo: a `streaming.hashing` algorithm name to verify with.
        expected_hash: the hex digest the file must have under `hash_algo`.
        expected_size: the byte count the file must have.
        progress: called with byte increments as data arrives (restarts count on a retry).
        backoff: base pause between attempts in seconds (doubles each time, plus jitter).

    Raises:
        FileNotFoundError: the object does not exist (not retried; names the URL).
        PermissionError: access was refused (not retried).
        HashMismatchError: ``Checksum failure: <local_path>`` (not retried).
        OversizedObjectError: more than `expected_size` bytes arrived (not retried).
        OSError: ENOSPC, EDQUOT or EROFS writing `local_path` (not retried; names it).
        TransferError: every attempt failed with a transient error (names the URL; a
            `TransferTimeoutError` when the last attempt ran out of time).
    """
    directory = os.path.dirname(os.path.abspath(local_path))
    if not os.path.isdir(directory):  # one `stat` where `makedirs` makes three system calls
        os.makedirs(directory, exist_ok=True)
    start = time.monotonic()
    try:
        count, attempts = call_with_retries(
            lambda: _fetch_once(store, remote_path, local_path, timeout, hash_algo,
                                expected_hash, expected_size, progress),
            retries=retries, backoff=backoff, what=f"Download of {store.url_for(remote_path)}")
    except OSError as err:
        if err.errno in _DISK_ERRNOS and err.filename is None:  # say which disk, not retried
            err.filename = local_path
        raise
    return TransferResult(count, time.monotonic() - start, attempts)


def read(store: Store, path: str, *, retries: int = 2, timeout: float | None = DEFAULT_TIMEOUT,
         backoff: float = 1.0) -> bytes:
    """The whole (small) object at `path`, with the retries and per-attempt timeout of `fetch`.

    For metadata such as an index, read into memory rather than a file.

    Raises:
        FileNotFoundError: the object does not exist (not retried; names the URL).
        PermissionError: access was refused (not retried).
        TransferError: every attempt failed with a transient error (names the URL).
    """
    return _read_retried(lambda: store.get(path), f"Reading {store.url_for(path)}", retries,
                         timeout, backoff)


def _read_retried(call: Callable[[], T], what: str, retries: int, timeout: float | None,
                  backoff: float) -> T:
    """`call()` (one read into memory) under `call_with_retries`, each attempt within
    `timeout`: the reads below share it."""
    data, _ = call_with_retries(lambda: _within(timeout, call, what), retries=retries,
                                backoff=backoff, what=what)
    return data


def read_stamped(store: Store, path: str, *, retries: int = 2,
                 timeout: float | None = DEFAULT_TIMEOUT, backoff: float = 1.0
                 ) -> tuple[bytes, float | None]:
    """`read`, with the object's modification time by the server's clock (None when the store
    cannot say): `Store.get_stamped`, the same request where the backend can."""
    return _read_retried(lambda: store.get_stamped(path), f"Reading {store.url_for(path)}",
                         retries, timeout, backoff)


def read_range(store: Store, path: str, start: int, end: int, *, retries: int = 2,
               timeout: float | None = DEFAULT_TIMEOUT, backoff: float = 1.0) -> bytes:
    """Bytes ``[start, end)`` of the object at `path`, with the retries and per-attempt timeout
    of `fetch` (fewer bytes only if the object is shorter: the caller decides what that means).

    Raises:
        FileNotFoundError: the object does not exist (not retried; names the URL).
        PermissionError: access was refused (not retried).
        TransferError: every attempt failed with a transient error (names the URL).
    """
    return _read_retried(lambda: store.get_range(path, start, end),
                         f"Reading bytes {start}-{end} of {store.url_for(path)}", retries,
                         timeout, backoff)


def read_tail(store: Store, path: str, length: int, *, retries: int = 2,
              timeout: float | None = DEFAULT_TIMEOUT, backoff: float = 1.0
              ) -> tuple[bytes, int]:
    """The last `length` bytes of the object at `path` and its size (`Store.get_tail`), with
    the retries and per-attempt timeout of `fetch`.

    Raises:
        FileNotFoundError: the object does not exist (not retried; names the URL).
        PermissionError: access was refused (not retried).
        TransferError: every attempt failed with a transient error (names the URL).
    """
    return _read_retried(lambda: store.get_tail(path, length),
                         f"Reading the last {length} bytes of {store.url_for(path)}", retries,
                         timeout, backoff)


def push(store: Store, local_path: str, remote_path: str, *, retries: int = 2,
         backoff: float = 1.0) -> TransferResult:
    """Upload `local_path` to `remote_path` of `store`, retrying transient failures.

    Raises:
        FileNotFoundError: the local file is missing (not retried).
        PermissionError: the store refused the write (not retried).
        TransferError: every attempt failed with a transient error (names the URL).
    """
    size = os.path.getsize(local_path)
    start = time.monotonic()
    _, attempts = call_with_retries(lambda: store.upload(local_path, remote_path),
                                    retries=retries, backoff=backoff,
                                    what=f"Upload to {store.url_for(remote_path)}")
    return TransferResult(size, time.monotonic() - start, attempts)
