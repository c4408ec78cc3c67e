"""The part of the s3/azure/http backends that is the same for all: calls into obstore.

A subclass only builds the obstore store for its URL from client settings (`_build`); this class
maps the `Store` interface onto obstore's free functions and its errors onto `FileNotFoundError`
/ `PermissionError`.

Uploads go through a second client. The HTTP client's read timeout also runs while a request
body is being sent (nothing is read then), so the short stall timeout that catches a dead
download would cut every upload request that takes longer than it to send: on a slow uplink,
every part of every upload. The upload client's read timeout is instead `upload_timeout`, a cap
on one request from its first byte sent to its answer, and an upload sends at most
`parallelism` parts at once so that each part gets a fair share of the link.

Every I/O method is `forksafe` (obstore's runtime does not survive `fork`).
obstore's own retries are off by default so that the transfer layer is the one place that
decides how often to try.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import obstore
from obstore.exceptions import GenericError, PermissionDeniedError, UnauthenticatedError

from streaming.defaults import IO_CHUNK_BYTES
from streaming.errors import TransferStalledError
from streaming.storage._forksafe import forksafe
from streaming.storage.base import (
    ErrorKind,
    MeteredWriter,
    ObjectNotFoundError,
    ObjectStat,
    ProgressFn,
    Store,
    error_detail,
)
from streaming.storage.client_options import client_settings, parallel_settings, upload_timeout
from streaming.storage.patience import read_wait
from streaming.storage.urls import redact

logger = logging.getLogger(__name__)

__all__ = ["ObstoreBackedStore"]

_STREAM_CHUNK = IO_CHUNK_BYTES

_KIND = re.compile(r"\bkind: (\w+)")
# What S3 and Azure answer a listing of a bucket / container that does not exist.
_MISSING_CONTAINER = re.compile(r"\b(NoSuchBucket|ContainerNotFound|status: 404\b)")
_REFUSED = re.compile(r"\b(status: 403\b|status code: 403\b)")
# A credential the client itself cannot use (e.g. an Azure key that is not base64).
_BAD_CREDENTIAL = re.compile(r"\b(InvalidAccessKey|Invalid Access Key)\b")


def _check_prefix(url: str, prefix: str) -> None:
    """Refuse, naming the URL, a key prefix obstore cannot name (it failed at the first request
    with "Could not parse path", showing neither scheme nor bucket, and a control character raw).

    Raises:
        ValueError: an empty, ``.`` or ``..`` segment, or an ASCII control character.
    """
    if not prefix:
        return
    odd = [s for s in prefix.split("/") if s in ("", ".", "..")]
    controls = sorted({c for c in prefix if ord(c) < 0x20 or ord(c) == 0x7F})
    if odd or controls:
        what = (f"an empty, '.' or '..' path segment ({prefix!r})" if odd else
                f"the control character(s) {', '.join(repr(c) for c in controls)}")
        hint = " (e.g. 'data//train' -> 'data/train')" if odd else ""
        raise ValueError(f"{redact(url)!r} names a key with {what}: legal in some object "
                         f"stores, but not one this library's client can name. Rename the "
                         f"prefix{hint}.")


class ObstoreBackedStore(Store):
    """A `Store` whose client is an ``obstore.store.*Store`` rooted at the same place.

    Subclasses call `_configure(options)` in their constructor; it consumes the shared
    `ClientOptions` keys. They implement `_build(settings)`, called once per process for the
    client of reads and listings and once for the client of uploads (module docstring).
    """

    _transient = (*Store._transient, "_upload_obj")
    client_holds_stall = True  # obstore's read_timeout

    def _configure(self, options: dict[str, Any], *, allow_http: bool,
                   parallel_threshold: int = 32 << 20) -> None:
        _check_prefix(self.url, getattr(self, "prefix", ""))
        self._upload_timeout = float(options.pop("upload_timeout", upload_timeout()))
        if not self._upload_timeout > 0:
            raise ValueError(f"upload_timeout must be positive, got {self._upload_timeout!r}")
        self._parallel = parallel_settings(options, parallel_threshold)
        self._settings = client_settings(options, allow_http=allow_http)
        if options:
            raise TypeError(f"Unknown {type(self).__name__} option(s): {sorted(options)}")

    def _build(self, settings: dict[str, Any]) -> Any:
        """The obstore store for this URL with these ``client_options`` / ``retry_config``."""
        raise NotImplementedError

    def _connect(self) -> Any:
        return self._build(self._settings)

    def _connect_patient(self) -> Any:
        """The client of attempts after a stalled one: its read timeout is patient."""
        client = self._settings["client_options"]
        wait = read_wait(client["read_timeout"].total_seconds())
        return self._build({**self._settings,
                            "client_options": {**client, "read_timeout": timedelta(seconds=wait)}})

    def _upload_settings(self) -> dict[str, Any]:
        """The settings of the upload client: the read timeout is `upload_timeout`."""
        client = {**self._settings["client_options"],
                  "read_timeout": timedelta(seconds=self._upload_timeout)}
        return {**self._settings, "client_options": client}

    def _upload_client(self) -> Any:
        """The client uploads go through, built on first use in this process."""
        return self._per_process("_upload_obj", lambda: self._build(self._upload_settings()))

    def _classify(self, err: Exception) -> ErrorKind | None:
        if isinstance(err, (PermissionDeniedError, UnauthenticatedError)):
            return "denied"
        if isinstance(err, GenericError):
            # obstore reports transport failures as a generic error whose debug text carries
            # the HTTP client's error kind.
            kinds = set(_KIND.findall(str(err)))
            if "InvalidCertificate(" in repr(err):  # retrying cannot make it trusted
                return "untrusted"
            if _BAD_CREDENTIAL.search(str(err)):  # a malformed key stays malformed: not retried
                return "denied"
            if "Timeout" in kinds:
                return "stalled"
            if "Connect" in kinds:
                return "unreachable"
            if kinds & {"Interrupted", "Body", "Decode"}:
                return "dropped"
            if _REFUSED.search(str(err)):  # a listing's 403 is not a PermissionDeniedError
                return "denied"
        return super()._classify(err)

    @forksafe
    def get(self, path: str) -> bytes:
        with self._errors(path):
            return bytes(obstore.get(self._client(), path).bytes())

    @forksafe
    def get_range(self, path: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        with self._errors(path):
            try:
                return bytes(obstore.get_range(self._client(), path, start=start, end=end))
            except GenericError:
                # Servers refuse a range that starts at or past the end (416); a file read
                # would return nothing there, and so do we. Anything else is a real error.
                size = self._after_refusal(lambda: obstore.head(self._client(), path))["size"]
                if start >= int(size):
                    return b""
                raise

    suffix_ranges: bool = True  # whether the service answers "the last N bytes" (Azure: no)

    @forksafe
    def get_tail(self, path: str, length: int) -> tuple[bytes, int]:
        if length <= 0 or not self.suffix_ranges:
            return super().get_tail(path, length)
        with self._errors(path):  # one request: a suffix range, and the size from its reply
            try:
                result = obstore.get(self._client(), path,
                                     options={"range": {"suffix": length}})
            except GenericError:  # some servers refuse a suffix of an empty object (416)
                return super().get_tail(path, length)
            return bytes(result.bytes()), int(result.meta["size"])

    @forksafe
    def size(self, path: str) -> int:
        with self._errors(path):
            return int(obstore.head(self._client(), path)["size"])

    def modified(self, path: str) -> float | None:
        with self._errors(path):
            return _seconds(obstore.head(self._client(), path).get("last_modified"))

    @forksafe
    def get_stamped(self, path: str) -> tuple[bytes, float | None]:
        with self._errors(path):  # one GET: the time comes with the body
            result = obstore.get(self._client(), path)
            return bytes(result.bytes()), _seconds(result.meta.get("last_modified"))

    @forksafe
    def iter_chunks(self, path: str) -> Iterator[bytes]:
        with self._errors(path):
            result = obstore.get(self._client(), path)
            for chunk in result.stream(min_chunk_size=_STREAM_CHUNK):
                yield bytes(chunk)

    @forksafe
    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        threshold, part, workers = self._parallel
        with self._errors(path), open(local_path, "wb") as f:
            out = MeteredWriter(f, progress, deadline)
            if not threshold or workers < 2:
                for chunk in obstore.get(self._client(), path).stream(
                        min_chunk_size=_STREAM_CHUNK):
                    out.write(memoryview(chunk))
                return out.bytes_written
            first = self._get_head_part(path, part)
            size = int(first.meta["size"])
            return self._download_parts(path, first, out, size,
                                        workers - 1 if size >= max(threshold, 2 * part) else 0)

    def _get_head_part(self, path: str, part: int) -> Any:
        """A GET of the first `part` bytes (all of a smaller object), which also tells the size.

        Asking for one part rather than the whole object matters for egress: a whole-object GET
        dropped after its first part has already pulled several MiB more into socket buffers.
        """
        try:
            return obstore.get(self._client(), path, options={"range": (0, part)})
        except GenericError as err:
            if " 416 " not in str(err):
                raise
            # A zero-byte object has no range to serve; a plain GET returns it.
            return self._after_refusal(lambda: obstore.get(self._client(), path))

    def _after_refusal(self, call: Callable[[], Any]) -> Any:
        """Run the request that follows a 416 answer; once more if its connection was reset.

        Some servers close a kept-alive connection after refusing a range, and the pooled
        connection's next request is then reset, or fails to be sent at all (fake-gcs-server,
        seen on a loaded machine); the request is idempotent, so one immediate retry on a fresh
        connection is safe.
        """
        try:
            return call()
        except Exception as err:
            unsent = isinstance(err, GenericError) and "Request" in _KIND.findall(str(err))
            if self._classify(err) != "dropped" and not unsent:
                raise
            return call()

    def _download_parts(self, path: str, first: Any, out: MeteredWriter, size: int,
                        threads: int) -> int:
        """Stream the first part from its open GET while ranged GETs fetch the rest.

        With `threads` > 0 the other parts download concurrently, each written at its own
        offset, so they may finish in any order; with 0 they follow one by one. The deadline and
        progress go through `out` as for a streamed download.
        """
        _, part, _ = self._parallel
        out.truncate(size)
        client = self._client()

        # Pin every part to the version the first GET saw: an object replaced mid-download
        # fails the attempt (retried whole) instead of mixing two versions in one file.
        etag = first.meta.get("e_tag")

        def fetch_part(start: int) -> None:
            options: dict[str, Any] = {"range": (start, min(size, start + part))}
            if etag:
                options["if_match"] = etag
            data = obstore.get(client, path, options=options).bytes()  # type: ignore[arg-type]
            if len(data) != min(part, size - start):
                raise ConnectionError(f"short range read of {self.url_for(path)} at {start}")
            out.write_at(memoryview(data), start)

        starts = range(part, size, part)
        if not threads:
            _write_first_part(first, out, min(part, size), self.url_for(path))
            for start in starts:
                fetch_part(start)
            return size
        with ThreadPoolExecutor(threads, thread_name_prefix="shardstream-range") as pool:
            futures = [pool.submit(fetch_part, start) for start in starts]
            try:
                _write_first_part(first, out, part, self.url_for(path))
                for future in futures:
                    future.result()
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
        return size

    @forksafe
    def upload(self, local_path: str, path: str) -> None:
        _, _, parts = self._parallel
        try:
            with self._errors(path):
                obstore.put(self._upload_client(), path, Path(local_path),
                            max_concurrency=parts)
        except ObjectNotFoundError:
            # A write finds no object missing: "not found" here is the bucket (container),
            # and the read-side advice of `not_found` would mislead.
            raise ObjectNotFoundError(
                f"Cannot upload to {self.url_for(path)}: the server says the bucket (container) "
                "does not exist, or these credentials cannot see it.") from None
        except TransferStalledError as err:
            raise TransferStalledError(
                f"An upload request to {self.url_for(path)} got no answer within "
                f"{self._upload_timeout:g} s (the upload_timeout option or "
                f"STREAMING_UPLOAD_TIMEOUT changes it): {error_detail(err.__cause__ or err)}"
            ) from err

    @forksafe
    def check_container(self) -> None:
        self._check_by_listing(self._list_first)

    def _list_first(self) -> None:
        """The first page of a listing (obstore maps neither a listing's 404 nor its 403: the
        404 is made `FileNotFoundError` here, the 403 is classified by `_classify`)."""
        try:
            next(iter(obstore.list(self._client(), chunk_size=1)), None)
        except GenericError as err:
            if _MISSING_CONTAINER.search(str(err)):
                raise FileNotFoundError(str(err).split("\n", 1)[0]) from None
            raise

    @forksafe
    def list_stats(self, prefix: str = "") -> dict[str, ObjectStat]:
        # obstore lists by directory; narrow to the string prefix ourselves.
        directory = prefix.rsplit("/", 1)[0] if "/" in prefix else None
        with self._errors(prefix):
            return {meta["path"]: ObjectStat(int(meta["size"]), meta["last_modified"].timestamp())
                    for batch in obstore.list(self._client(), prefix=directory)
                    for meta in batch if meta["path"].startswith(prefix)}


def _seconds(stamp: Any) -> float | None:
    """A `last_modified` of obstore's in seconds since the epoch; obstore reads a missing
    Last-Modified (a web server that cannot say) as the epoch itself, which means unknown."""
    return stamp.timestamp() if stamp is not None and stamp.timestamp() > 0 else None


def _write_first_part(result: Any, out: MeteredWriter, part: int, url: str) -> None:
    """Copy the first `part` bytes of an open GET to offset 0, then drop the stream."""
    offset = 0
    if part == 0:
        return
    for chunk in result.stream(min_chunk_size=_STREAM_CHUNK):
        view = memoryview(chunk)[: part - offset]
        out.write_at(view, offset)
        offset += len(view)
        if offset >= part:
            return  # the rest comes from ranged GETs
    raise ConnectionError(f"short read of {url}: {offset} of the first {part} bytes")
