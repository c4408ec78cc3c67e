"""`dbfs:/Volumes/...` (Unity Catalog volumes) and `dbfs:/...` (DBFS), via databricks-sdk.

`WorkspaceClient()` reads `DATABRICKS_HOST` / `DATABRICKS_TOKEN` (or a config profile) itself.
Volumes go through the Files API, other paths through the DBFS API; neither serves byte ranges,
so `get_range` reads the object and slices. No workspace runs here: the tests drive the store
through an in-memory stand-in for the Files API (`tests/storage/test_storage_dbfs.py`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import NotFound, PermissionDenied, Unauthenticated

from streaming.storage.base import ErrorKind, Store
from streaming.storage.metered import MeteredWriter, ProgressFn, copy_chunks
from streaming.storage.urls import parse_dbfs_url

__all__ = ["DBFSStore"]

class DBFSStore(Store):
    """A directory in a Databricks workspace's DBFS or a Unity Catalog volume.

    Args:
        url: ``dbfs:/Volumes/<catalog>/<schema>/<volume>[/dir]`` or ``dbfs:/<dir>``.
    """

    scheme = "dbfs"
    supports_ranges = False  # emulated by reading the whole object

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url)
        self.root, self.is_volume = parse_dbfs_url(url)
        if options:
            raise TypeError(f"Unknown DBFS store option(s): {sorted(options)}")

    def url_for(self, path: str) -> str:
        return f"dbfs:{self._abs(path)}"

    def _connect(self) -> WorkspaceClient:
        from databricks import sdk  # looked up now, so a client patched by the caller is used

        return sdk.WorkspaceClient()

    def _abs(self, path: str) -> str:
        return posixpath.join(self.root, path) if path else self.root

    def _classify(self, err: Exception) -> ErrorKind | None:
        code = getattr(err, "error_code", None)  # the SDK raises plain DatabricksErrors too
        if isinstance(err, NotFound) or code == "NOT_FOUND":
            return "missing"
        if isinstance(err, (PermissionDenied, Unauthenticated)) or code in (
                "PERMISSION_DENIED", "UNAUTHENTICATED"):
            return "denied"
        return super()._classify(err)

    def _open(self, path: str) -> Any:
        client = self._client()
        if self.is_volume:
            return client.files.download(self._abs(path)).contents
        return client.dbfs.download(self._abs(path))

    def get(self, path: str) -> bytes:
        with self._errors(path), self._open(path) as f:
            return f.read()

    def get_range(self, path: str, start: int, end: int) -> bytes:
        return self.get(path)[start:max(start, end)]

    def size(self, path: str) -> int:
        with self._errors(path):
            client = self._client()
            if self.is_volume:
                return int(client.files.get_metadata(self._abs(path)).content_length)
            return int(client.dbfs.get_status(self._abs(path)).file_size)

    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        with self._errors(path), self._open(path) as src, open(local_path, "wb") as f:
            return copy_chunks(src.read, MeteredWriter(f, progress, deadline))

    def upload(self, local_path: str, path: str) -> None:
        with self._errors(path), open(local_path, "rb") as f:
            client = self._client()
            if self.is_volume:
                client.files.upload(self._abs(path), f, overwrite=True)
            else:
                client.dbfs.upload(self._abs(path), f, overwrite=True)

    def list(self, prefix: str = "") -> list[str]:
        with self._errors(prefix):
            paths = list(self._walk(self.root))
        cut = len(self.root.rstrip("/")) + 1
        return sorted(p[cut:] for p in paths if p[cut:].startswith(prefix))

    def _walk(self, directory: str) -> Iterator[str]:
        client = self._client()
        if not self.is_volume:
            yield from (info.path for info in client.dbfs.list(directory, recursive=True)
                        if not info.is_dir)
            return
        for entry in client.files.list_directory_contents(directory):
            if entry.is_directory:
                yield from self._walk(entry.path.rstrip("/"))
            else:
                yield entry.path
