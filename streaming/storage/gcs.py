"""`gs://bucket/prefix` through google-cloud-storage (the `gcs` extra): reads and writes.

Application Default Credentials, or anonymous requests against `STORAGE_EMULATOR_HOST`
(fake-gcs-server). Which GCS store serves a URL is decided in `streaming.storage.gcs_obstore`
(`open_gcs_store`): HMAC keys go through the S3-compatible API, and without this extra installed
reads go through obstore's native GCS store.

Every call passes ``retry=None``: the transfer layer already retries with its own backoff and
deadline, and google's retry inside each of those attempts made a refused connection wait out
the whole timeout, twice, and end in a bare "took longer than" error.
"""

from __future__ import annotations

import os
from typing import Any, TypedDict

import requests
from google.api_core import exceptions as gexc
from google.cloud import storage

from streaming.storage.base import (
    ErrorKind,
    MeteredWriter,
    ObjectStat,
    ProgressFn,
    Store,
)
from streaming.storage.client_options import upload_timeout
from streaming.storage.messages import GCS_ERROR_NO_AUTHENTICATION
from streaming.storage.patience import read_wait, stall_timeout
from streaming.storage.urls import split_url

__all__ = ["GCSStore", "GCSOptions", "GCS_ERROR_NO_AUTHENTICATION"]


class GCSOptions(TypedDict, total=False):
    """Settings for the GCS stores; each defaults to the environment variable named."""

    emulator_host: str
    """Emulator URL (`STORAGE_EMULATOR_HOST`); requests are then anonymous."""
    project: str
    """Project for the client (`GOOGLE_CLOUD_PROJECT`; only used to build the client)."""
    timeout: float
    """Seconds per HTTP request (connect and read) of the google client. By default a connect
    or a wait for the next bytes lasts the stall timeout (`STREAMING_STALL_TIMEOUT`, 5 s), as
    on the other stores, and an upload waits for its answer `STREAMING_UPLOAD_TIMEOUT`."""


class GCSStore(Store):
    """A GCS bucket (or a prefix inside one) through google-cloud-storage.

    Args:
        url: ``gs://bucket[/prefix]``.
        options: `GCSOptions`.
    """

    scheme = "gs"

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url)
        _, self.bucket_name, self.prefix = split_url(url)
        if not self.bucket_name:
            raise ValueError(f"GCS URL needs a bucket: {url}")
        self.emulator = options.pop("emulator_host", None) or os.environ.get(
            "STORAGE_EMULATOR_HOST")
        self.project = options.pop("project", None) or os.environ.get("GOOGLE_CLOUD_PROJECT")
        given = options.pop("timeout", None)
        stall = stall_timeout()
        # requests' (connect, read) timeouts; its read timeout is the longest wait for the
        # next bytes, which is what the stall timeout means.
        self._timeout: float | tuple[float, float] = (
            float(given) if given is not None else (stall, stall))
        self.upload_timeout: float | tuple[float, float] = (
            float(given) if given is not None else (stall, upload_timeout()))
        if options:
            raise TypeError(f"Unknown GCS store option(s): {sorted(options)}")

    @property
    def timeout(self) -> float | tuple[float, float]:
        """requests' timeouts for a call now: the read one is patient after a stall
        (`streaming.storage.patience`)."""
        if isinstance(self._timeout, tuple):
            return (self._timeout[0], read_wait(self._timeout[1]))
        return self._timeout

    def _connect(self) -> storage.Bucket:
        if self.emulator:
            from google.auth.credentials import AnonymousCredentials

            client = storage.Client(project=self.project or "emulator",
                                    credentials=AnonymousCredentials(),
                                    client_options={"api_endpoint": self.emulator})
        else:
            from google.auth import default as default_credentials
            from google.auth.exceptions import DefaultCredentialsError

            try:
                credentials, project = default_credentials()
            except DefaultCredentialsError as err:
                raise ValueError(GCS_ERROR_NO_AUTHENTICATION) from err
            client = storage.Client(project=self.project or project, credentials=credentials)
        return client.bucket(self.bucket_name)

    def _key(self, path: str) -> str:
        return f"{self.prefix}/{path}" if self.prefix else path

    def _blob(self, path: str) -> storage.Blob:
        return self._client().blob(self._key(path))

    def _classify(self, err: Exception) -> ErrorKind | None:
        if isinstance(err, gexc.NotFound):
            return "missing"
        if isinstance(err, (gexc.Forbidden, gexc.Unauthorized)):
            return "denied"
        # requests' errors (the google client's transport) are no builtin ConnectionError.
        if isinstance(err, requests.exceptions.ConnectTimeout):
            return "unreachable"
        if isinstance(err, requests.exceptions.Timeout):
            return "stalled"
        if isinstance(err, (requests.exceptions.ChunkedEncodingError,
                            requests.exceptions.ContentDecodingError)):
            return "dropped"
        if isinstance(err, requests.exceptions.ConnectionError):
            text = str(err)
            return "dropped" if "aborted" in text or "reset" in text else "unreachable"
        return super()._classify(err)

    def get(self, path: str) -> bytes:
        with self._errors(path):
            return self._blob(path).download_as_bytes(timeout=self.timeout, retry=None)

    def get_range(self, path: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        with self._errors(path):  # the client's `end` is inclusive
            try:
                return self._blob(path).download_as_bytes(start=start, end=end - 1,
                                                          timeout=self.timeout, retry=None)
            except gexc.RequestRangeNotSatisfiable:
                return b""  # the range starts at or past the end, as a file read would say

    def size(self, path: str) -> int:
        with self._errors(path):
            blob = self._client().get_blob(self._key(path), timeout=self.timeout, retry=None)
        if blob is None:
            raise self.not_found(path)
        return int(blob.size)

    def modified(self, path: str) -> float | None:
        with self._errors(path):
            blob = self._client().get_blob(self._key(path), timeout=self.timeout, retry=None)
        if blob is None:
            raise self.not_found(path)
        return None if blob.updated is None else blob.updated.timestamp()

    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        with self._errors(path), open(local_path, "wb") as f:
            out = MeteredWriter(f, progress, deadline)
            self._blob(path).download_to_file(out, timeout=self.timeout, retry=None)
        return out.bytes_written

    def upload(self, local_path: str, path: str) -> None:
        with self._errors(path):
            self._blob(path).upload_from_filename(local_path, timeout=self.upload_timeout,
                                                  retry=None)

    def check_container(self) -> None:
        self._check_by_listing(lambda: next(iter(self._client().client.list_blobs(
            self.bucket_name, prefix=self.prefix or None, max_results=1,
            timeout=self.timeout, retry=None)), None))

    def list_stats(self, prefix: str = "") -> dict[str, ObjectStat]:
        cut = len(self.prefix) + 1 if self.prefix else 0
        with self._errors(prefix):
            blobs = self._client().client.list_blobs(self.bucket_name, prefix=self._key(prefix),
                                                     timeout=self.timeout, retry=None)
            return {blob.name[cut:]: ObjectStat(int(blob.size or 0), blob.updated.timestamp()
                                                if blob.updated else 0.0)
                    for blob in blobs}
