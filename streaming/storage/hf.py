"""`hf://datasets/<org>/<repo>/<path>`: a Hugging Face dataset repository, via huggingface_hub.

Uses `HfFileSystem` for every operation (ranged reads, listing and uploads included); the token
comes from `HF_TOKEN` or huggingface_hub's own lookup. Not tested against a server here (there is
no local Hub); URL parsing, the registry entry and the missing-SDK error are.
"""

from __future__ import annotations

import os
from typing import Any

from huggingface_hub import HfFileSystem
from huggingface_hub.utils import HfHubHTTPError

from streaming.storage.base import ErrorKind, ProgressFn, Store
from streaming.storage.urls import parse_hf_url

__all__ = ["HFStore"]


class HFStore(Store):
    """A directory inside a Hugging Face dataset repository.

    Args:
        url: ``hf://datasets/<org>/<repo>[/<dir>]``.
        options: ``token`` (default `HF_TOKEN`), ``revision``.
    """

    scheme = "hf"
    supports_ranges = True

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url)
        self.repo_id, self.prefix = parse_hf_url(url)
        self._token = options.pop("token", None) or os.environ.get("HF_TOKEN")
        self.revision = options.pop("revision", None)
        if options:
            raise TypeError(f"Unknown HF store option(s): {sorted(options)}")

    def _connect(self) -> HfFileSystem:
        return HfFileSystem(token=self._token)

    def _fs_path(self, path: str) -> str:
        root = f"datasets/{self.repo_id}"
        if self.revision:
            root = f"{root}@{self.revision}"
        return "/".join(part for part in (root, self.prefix, path) if part)

    def _classify(self, err: Exception) -> ErrorKind | None:
        if isinstance(err, HfHubHTTPError):
            status = getattr(err.response, "status_code", None)
            return {404: "missing", 401: "denied", 403: "denied"}.get(status)  # type: ignore
        return super()._classify(err)

    def get(self, path: str) -> bytes:
        with self._errors(path):
            return self._client().cat_file(self._fs_path(path))

    def get_range(self, path: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        with self._errors(path):
            return self._client().cat_file(self._fs_path(path), start=start, end=end)

    def size(self, path: str) -> int:
        with self._errors(path):
            info = self._client().info(self._fs_path(path))
        if info.get("type") == "directory":
            raise self.not_found(path)
        return int(info["size"])

    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        with self._errors(path):
            self._client().get_file(self._fs_path(path), local_path)
        count = os.path.getsize(local_path)
        if progress is not None:
            progress(count)
        return count

    def upload(self, local_path: str, path: str) -> None:
        with self._errors(path):
            self._client().put_file(local_path, self._fs_path(path))

    def list(self, prefix: str = "") -> list[str]:
        base = self._fs_path("")
        with self._errors(prefix):
            paths = self._client().find(base)
        cut = len(base) + 1
        return sorted(p[cut:] for p in paths if p[cut:].startswith(prefix))
