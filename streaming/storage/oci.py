"""`oci://bucket@namespace/prefix`: Oracle Cloud Object Storage, via the oci SDK.

Credentials come from ``~/.oci/config`` (`oci.config.from_file()`), as in the reference; the
namespace is asked of the service when the URL has none. Not tested against a server here; URL
parsing, the registry entry and the missing-SDK error are.
"""

from __future__ import annotations

from typing import Any

import oci

from streaming.defaults import IO_CHUNK_BYTES
from streaming.storage.base import ErrorKind, MeteredWriter, ProgressFn, Store
from streaming.storage.urls import parse_oci_url

__all__ = ["OCIStore"]


class OCIStore(Store):
    """A bucket (or a prefix inside one) in OCI Object Storage.

    Args:
        url: ``oci://bucket[@namespace][/prefix]``.
        options: ``config_file`` and ``profile`` for `oci.config.from_file`.
    """

    scheme = "oci"

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url)
        self.bucket, self.namespace, self.prefix = parse_oci_url(url)
        self.config_file = options.pop("config_file", oci.config.DEFAULT_LOCATION)
        self.profile = options.pop("profile", oci.config.DEFAULT_PROFILE)
        if options:
            raise TypeError(f"Unknown OCI store option(s): {sorted(options)}")

    def _connect(self) -> oci.object_storage.ObjectStorageClient:
        config = oci.config.from_file(self.config_file, self.profile)
        client = oci.object_storage.ObjectStorageClient(config)
        if self.namespace is None:
            self.namespace = client.get_namespace().data
        return client

    def _key(self, path: str) -> str:
        return f"{self.prefix}/{path}" if self.prefix else path

    def _classify(self, err: Exception) -> ErrorKind | None:
        if isinstance(err, oci.exceptions.ServiceError):
            return {404: "missing", 401: "denied", 403: "denied"}.get(err.status)  # type: ignore
        return super()._classify(err)

    def _get(self, path: str, **kwargs: Any) -> Any:
        client = self._client()
        return client.get_object(self.namespace, self.bucket, self._key(path), **kwargs)

    def get(self, path: str) -> bytes:
        with self._errors(path):
            return self._get(path).data.content

    def get_range(self, path: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        with self._errors(path):
            return self._get(path, range=f"bytes={start}-{end - 1}").data.content

    def size(self, path: str) -> int:
        with self._errors(path):
            client = self._client()
            response = client.head_object(self.namespace, self.bucket, self._key(path))
        return int(response.headers["content-length"])

    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        with self._errors(path), open(local_path, "wb") as f:
            out = MeteredWriter(f, progress, deadline)
            for chunk in self._get(path).data.raw.stream(IO_CHUNK_BYTES, decode_content=False):
                out.write(chunk)
        return out.bytes_written

    def upload(self, local_path: str, path: str) -> None:
        with self._errors(path):
            manager = oci.object_storage.UploadManager(self._client())
            manager.upload_file(self.namespace, self.bucket, self._key(path), local_path)

    def check_container(self) -> None:
        self._check_by_listing(lambda: self._client().list_objects(
            self.namespace, self.bucket, prefix=self._key(""), limit=1))

    def list(self, prefix: str = "") -> list[str]:
        names: list[str] = []
        start = None
        cut = len(self.prefix) + 1 if self.prefix else 0
        with self._errors(prefix):
            client = self._client()
            while True:
                page = client.list_objects(self.namespace, self.bucket, prefix=self._key(prefix),
                                           start=start).data
                names.extend(obj.name[cut:] for obj in page.objects)
                start = page.next_start_with
                if not start:
                    break
        return sorted(names)
