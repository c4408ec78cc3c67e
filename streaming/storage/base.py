"""The `Store` interface every URL scheme implements, plus the small helpers backends share.

A store is rooted at a URL; every path it takes is relative to that root. Backends translate
their client's errors into ours (`streaming.storage.store_errors`), naming the full URL:
`FileNotFoundError` / `PermissionError` (never retried); an unreachable server, a dropped
connection or a stalled one (retried at once by `streaming.storage.transfer`); everything else
passes through (retried with backoff). Nothing here knows about shards, caches or retries.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, NamedTuple

from streaming.errors import (
    ConnectionDroppedError,
    RemoteUnreachableError,
    StreamingError,
    TransferStalledError,
)
from streaming.storage.metered import MeteredWriter, ProgressFn
from streaming.storage.patience import is_patient
from streaming.storage.store_errors import (
    CONNECTION_ERRORS,
    AccessDeniedError,
    ErrorKind,
    ObjectNotFoundError,
    UntrustedCertificateError,
    error_detail,
    untrusted,
)

_logger = logging.getLogger(__name__)
# Error codes of a 403 that say the credentials themselves are wrong (S3, Azure), not that a
# policy forbids the request.
_XML_CODE = re.compile(r"<Code>(\w+)</Code>")  # of an S3/Azure error body
_XML_MESSAGE = re.compile(r"<Message>([^<]*)</Message>")
# Azure says "AuthenticationFailed" for a wrong key; Azurite says "AuthorizationFailure" (which
# Azure keeps for policy refusals) with Azure's message for it, matched by that message.
_BAD_CREDENTIALS = re.compile(r"\b(SignatureDoesNotMatch|InvalidAccessKeyId|InvalidToken|"
                              r"ExpiredToken|AuthenticationFailed|InvalidAuthenticationInfo|"
                              r"Server failed to authenticate the request)\b")

__all__ = ["Store", "MeteredWriter", "ObjectStat", "ProgressFn", "ObjectNotFoundError",
           "AccessDeniedError", "ErrorKind", "UntrustedCertificateError", "error_detail"]


class ObjectStat(NamedTuple):
    """What a listing says of one object."""

    size: int  # bytes
    modified: float  # last modification, seconds since the epoch by the server's clock


class Store(ABC):
    """Object storage rooted at one URL.

    Subclasses set `scheme` and the capability flags, implement the abstract methods, and keep
    every client object in attributes named in `_transient` so the store pickles into spawned
    workers and rebuilds its client there (see `_client`).

    Args:
        url: the root; paths passed to methods are relative to it.
    """

    scheme: ClassVar[str] = ""
    supports_writes: ClassVar[bool] = True
    supports_listing: ClassVar[bool] = True
    supports_ranges: ClassVar[bool] = True
    # Whether a call can block indefinitely (a socket). Transfers then run in a helper thread
    # that can be abandoned at the timeout; stores that cannot stall are called directly, which
    # saves a thread start per file (most of the cost of fetching tiny local files).
    can_stall: ClassVar[bool] = True
    # Whether a `Stream` pickled into a DataLoader worker takes this store along instead of
    # opening its URL again there: a user's `DOWNLOADER_MAPPINGS` entry made under `if __name__
    # == '__main__':` is not in a spawned worker's table (the reference pickles its downloader).
    travels_with_streams: ClassVar[bool] = False
    # Whether the client is built with the stall timeout (then attempts after a stalled one use
    # a patient twin, `_connect_patient`); other stores pass `patience.read_wait` per call.
    client_holds_stall: ClassVar[bool] = False
    # Attributes dropped when pickling; rebuilt lazily in the receiving process.
    _transient: ClassVar[tuple[str, ...]] = ("_client_obj", "_patient_obj", "_client_lock")

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/") if "://" in url else url
        self._client_obj: tuple[int, Any] | None = None  # (pid, client): see `_client`
        self._patient_obj: tuple[int, Any] | None = None
        self._client_lock = threading.Lock()

    # ---- the interface -----------------------------------------------------------------------

    @abstractmethod
    def get(self, path: str) -> bytes:
        """The whole object."""

    @abstractmethod
    def get_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object (fewer only if the object is shorter)."""

    @abstractmethod
    def size(self, path: str) -> int:
        """The object's length in bytes."""

    def modified(self, path: str) -> float | None:
        """The object's last modification time (seconds since the epoch, by the server's clock)
        in one cheap request, or None when this store cannot say.

        How a cache notices a dataset rewritten in place under an unchanged index
        (`streaming.cache.index_cache`)."""
        return None

    def get_stamped(self, path: str) -> tuple[bytes, float | None]:
        """The whole object and its `modified` time, in one request where the backend can (the
        time is asked first here: a write in between can only make it look older)."""
        try:
            stamp = self.modified(path)
        except Exception as err:  # noqa: BLE001 (a refused HEAD: the body is what counts)
            _logger.debug("No modification time for %s (%s: %s)", self.url_for(path),
                          type(err).__name__, err)
            stamp = None
        return self.get(path), stamp

    def get_tail(self, path: str, length: int) -> tuple[bytes, int]:
        """The object's last `length` bytes (all of it if shorter) and its size.

        Backends that can ask for a suffix in one request override this (a file's footer is
        then one round trip, not two).
        """
        size = self.size(path)
        return self.get_range(path, max(0, size - length), size), size

    @abstractmethod
    def upload(self, local_path: str, path: str) -> None:
        """Store the local file under `path`, replacing any existing object."""

    def list(self, prefix: str = "") -> list[str]:
        """Sorted relative paths of every object (recursively) whose path starts with `prefix`.

        A store implements this or `list_stats`."""
        found = self.list_stats(prefix)
        if found is None:
            raise NotImplementedError(f"{type(self).__name__} implements neither list nor "
                                      "list_stats")
        return sorted(found)

    def list_stats(self, prefix: str = "") -> dict[str, ObjectStat] | None:
        """The objects `list` names, each with its size and last modification time; None when
        this store's listing carries neither (then only `list` answers)."""
        return None

    def list_modified(self, prefix: str = "") -> dict[str, float] | None:
        """The objects `list` names, each with its last modification time (seconds since the
        epoch, by the server's clock); None when this store's listing carries no times.

        How the cache tells a file rewritten at the remote from the copy it holds when the index
        gives no digest (`streaming.cache.index_cache`)."""
        stats = self.list_stats(prefix)
        return None if stats is None else {path: stat.modified for path, stat in stats.items()}

    def check_container(self) -> None:
        """Fail now if the bucket (container) this store lives in does not exist, so a writer
        hears of a misspelt remote before its work, not when its first upload fails. Stores
        without buckets (local folders, SFTP, read-only HTTP) have nothing to check.

        Raises:
            ObjectNotFoundError: the bucket does not exist (or these credentials cannot see it).
        """
        return None  # nothing to check where there is no bucket

    def _check_by_listing(self, list_one: Callable[[], object]) -> None:
        """`check_container` for stores in buckets: `list_one` lists at most one object under
        the prefix (raising ours). A missing bucket fails; credentials the server rejects
        outright fail too (no upload would get through); access refused by policy passes
        (credentials may write without listing), and so does a server that cannot be reached
        now (the uploads retry): either way the uploads will tell."""
        try:
            with self._errors(""):
                list_one()
        except ObjectNotFoundError:
            raise ObjectNotFoundError(
                f"The bucket of {self.url} does not exist (or these credentials cannot see "
                "it).") from None
        except AccessDeniedError as err:
            if _BAD_CREDENTIALS.search(str(err)):
                raise
        except (RemoteUnreachableError, ConnectionDroppedError, TransferStalledError) as err:
            _logger.warning("Could not check that the bucket of %s exists: %s", self.url, err)

    def exists(self, path: str) -> bool:
        """Whether an object exists at `path` (permission problems still raise)."""
        try:
            self.size(path)
        except FileNotFoundError:
            return False
        return True

    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        """Write the object into `local_path` (created or truncated) and return its size.

        Not atomic on its own: `streaming.storage.transfer.fetch` adds the temp name, checks and
        rename. `deadline` is a `time.monotonic()` value after which the copy gives up with
        `TimeoutError`.
        """
        with open(local_path, "wb") as f:
            out = MeteredWriter(f, progress, deadline)
            for chunk in self.iter_chunks(path):
                out.write(chunk)
        return out.bytes_written

    def iter_chunks(self, path: str) -> Iterator[bytes]:
        """The object as a sequence of byte chunks; backends that can stream override this."""
        yield self.get(path)

    # ---- helpers for backends ----------------------------------------------------------------

    def url_for(self, path: str) -> str:
        """The full URL of a relative path, for error messages and logs."""
        if not path:
            return self.url
        return f"{self.url}/{path.lstrip('/')}" if "://" in self.url else os.path.join(
            self.url, path)

    def not_found(self, path: str) -> ObjectNotFoundError:
        return ObjectNotFoundError(self._not_found_message(path))

    def _not_found_message(self, path: str) -> str:
        return f"Object {self.url_for(path)} not found."

    def denied(self, path: str, detail: object = "") -> AccessDeniedError:
        """Refused access to `path`; `detail` is the client's error text. A server's XML body
        is cut down to its error code and message (`SignatureDoesNotMatch: ...` tells a wrong
        secret from a policy that forbids the request)."""
        full = str(detail)
        text = full.split("\n", 1)[0].split("<?xml", 1)[0].rstrip(": ")
        code, message = _XML_CODE.search(full), _XML_MESSAGE.search(full)
        said = ": ".join(m.group(1) for m in (code, message) if m)
        extra = said or text[:300]  # the server's own words, else the client's first line
        return AccessDeniedError(f"Access denied to {self.url_for(path)}"
                                 + (f": {extra}" if extra else ""))

    def _classify(self, err: Exception) -> ErrorKind | None:
        """What a client error means: a missing object, refused access, a server that cannot be
        reached, a connection dropped mid-transfer, a stalled one, or something else (None).

        Backends override this with their SDK's error types; the default knows the builtins.
        """
        if isinstance(err, FileNotFoundError):
            return "missing"
        if isinstance(err, PermissionError):
            return "denied"
        if isinstance(err, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return "dropped"
        if isinstance(err, ConnectionError):
            return "unreachable"
        if isinstance(err, TimeoutError):
            return "stalled"
        return None

    @contextmanager
    def _errors(self, path: str) -> Iterator[None]:
        """Turn the client's errors for `path` into ours, each naming the URL: missing and
        denied (never retried), unreachable, dropped and stalled (retried at once)."""
        try:
            yield
        except (ObjectNotFoundError, AccessDeniedError, StreamingError):
            raise
        except Exception as err:
            kind = self._classify(err)
            if kind == "missing":
                raise self.not_found(path) from None
            if kind == "denied":
                raise self.denied(path, err) from None
            if kind == "untrusted":
                raise untrusted(self.url_for(path), err) from None
            if kind is not None:
                raise CONNECTION_ERRORS[kind](self.url_for(path), err) from err
            raise

    def _client(self) -> Any:
        """The backend's client, built on first use in this process (after fork or unpickling);
        in an attempt after a stalled one, its patient twin (`_connect_patient`).

        Setting `_client_obj` to None makes the next call build a new one."""
        if self.client_holds_stall and is_patient():
            return self._per_process("_patient_obj", self._connect_patient)
        return self._per_process("_client_obj", self._connect)

    def _per_process(self, name: str, build: Callable[[], Any]) -> Any:
        """`build()`, made on first use in this process and kept with the pid in attribute
        `name` (listed in `_transient`; None there means "build again")."""
        pid = os.getpid()
        cached = getattr(self, name, None)
        if cached is None or cached[0] != pid:
            with self._client_lock:
                cached = getattr(self, name, None)
                if cached is None or cached[0] != pid:
                    cached = (pid, build())
                    setattr(self, name, cached)
        return cached[1]

    def _connect(self) -> Any:
        """Build the backend's client (stores without one never call `_client`)."""
        raise NotImplementedError

    def _connect_patient(self) -> Any:
        """Build the client of patient attempts (`streaming.storage.patience`), for a backend
        whose client holds the stall timeout (`client_holds_stall`)."""
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in self._transient:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in self._transient:
            setattr(self, name, None)
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"
