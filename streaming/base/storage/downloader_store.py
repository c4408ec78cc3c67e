"""A user's `CloudDownloader` serving datasets: the reference's way to add or replace a scheme.

In the reference, a dataset downloads through `DOWNLOADER_MAPPINGS[scheme]`, so code that puts
its own `CloudDownloader` subclass there (a private scheme, an S3 mirror with its own auth) is
honoured by every dataset. Ours downloads through `streaming.storage` stores; this module makes
such an entry a store. Only entries the user changed are adapted: the shipped classes stay
behind their native stores, which do more (ranged reads, listing, uploads).

The store downloads only: a downloader can neither list, nor upload, nor read part of a file.
Atomic placement, retries, size and hash checks stay `streaming.storage.transfer.fetch`'s: the
downloader writes the temporary file it is given.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from streaming.storage.base import ProgressFn, Store

if TYPE_CHECKING:
    from streaming.base.storage.download import CloudDownloader

__all__ = ["DownloaderStore", "downloader_resolver"]

_DEFAULT_TIMEOUT = 60.0  # seconds per file when the caller sets no deadline (the reference's)


class DownloaderStore(Store):
    """The objects under `url`, downloaded one file at a time by a `CloudDownloader` class.

    Args:
        url: the root; paths are relative to it.
        downloader: the class to download with (one instance per process, made on first use).
    """

    supports_writes = False
    supports_listing = False
    supports_ranges = False
    _transient: ClassVar[tuple[str, ...]] = (*Store._transient, "_downloader_obj")

    def __init__(self, url: str, downloader: type[CloudDownloader]) -> None:
        super().__init__(url)
        self.downloader = downloader
        self._downloader_obj: tuple[int, Any] | None = None

    def _downloader(self) -> CloudDownloader:
        return self._per_process("_downloader_obj", self.downloader)

    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        timeout = _DEFAULT_TIMEOUT if deadline is None else max(deadline - time.monotonic(), 1e-3)
        if os.path.exists(local_path):  # `CloudDownloader.download` keeps a file already there
            os.remove(local_path)
        downloader = self._downloader()
        try:
            with self._errors(path):
                downloader.download(self.url_for(path), local_path, timeout)
        except BaseException:
            downloader.clean_up()  # as the reference after a failed attempt: a broken client goes
            raise
        if not os.path.isfile(local_path):
            raise self.not_found(path)
        size = os.path.getsize(local_path)
        if progress is not None:
            progress(size)
        return size

    def get(self, path: str) -> bytes:
        with tempfile.TemporaryDirectory(prefix="shardstream-get-") as scratch:
            local = os.path.join(scratch, "object")
            self.download(path, local)
            with open(local, "rb") as file:
                return file.read()

    def get_range(self, path: str, start: int, end: int) -> bytes:
        return self.get(path)[start:end]  # a downloader fetches whole files only

    def size(self, path: str) -> int:
        return len(self.get(path))

    def upload(self, local_path: str, path: str) -> None:
        raise NotImplementedError(
            f"{self.downloader.__name__} (DOWNLOADER_MAPPINGS) only downloads; upload to "
            f"{self.url_for(path)} through a store (streaming.storage.register_store)."
        )

    def list(self, prefix: str = "") -> list[str]:
        raise NotImplementedError(
            f"{self.downloader.__name__} (DOWNLOADER_MAPPINGS) cannot list {self.url}."
        )

    def __repr__(self) -> str:
        return f"DownloaderStore({self.url!r}, {self.downloader.__name__})"


def downloader_resolver(mappings: dict[str, type[CloudDownloader]],
                        shipped: dict[str, type[CloudDownloader]],
                        key: Callable[[str], str]) -> Callable[[str], Store | None]:
    """The `add_store_resolver` hook serving the URLs whose scheme's entry in `mappings` (keyed
    by `key(url)`) is not the class `shipped` with it: a scheme a user added or replaced."""

    def resolve(url: str) -> Store | None:
        scheme = key(url)
        chosen = mappings.get(scheme)
        if chosen is None or chosen is shipped.get(scheme):
            return None
        return DownloaderStore(url, chosen)

    return resolve
