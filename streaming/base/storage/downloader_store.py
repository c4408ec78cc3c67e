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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from streaming.storage.base import Store
from streaming.storage.whole_file_store import WholeFileStore

if TYPE_CHECKING:
    from streaming.base.storage.download import CloudDownloader

__all__ = ["DownloaderStore", "downloader_resolver"]


class DownloaderStore(WholeFileStore):
    """The objects under `url`, downloaded one file at a time by a `CloudDownloader` class.

    Args:
        url: the root; paths are relative to it.
        downloader: the class to download with (one instance per process, made on first use).
    """

    _transient: ClassVar[tuple[str, ...]] = (*Store._transient, "_downloader_obj")
    travels_with_streams = True  # the class chosen here, as the reference's pickled downloader

    def __init__(self, url: str, downloader: type[CloudDownloader]) -> None:
        super().__init__(url)
        self.downloader = downloader
        self._downloader_obj: tuple[int, Any] | None = None

    @property
    def fetcher(self) -> str:
        return f"{self.downloader.__name__} (DOWNLOADER_MAPPINGS)"

    def _downloader(self) -> CloudDownloader:
        return self._per_process("_downloader_obj", self.downloader)

    def fetch_file(self, path: str, local_path: str, timeout: float) -> None:
        self._downloader().download(self.url_for(path), local_path, timeout)

    def failed(self) -> None:
        self._downloader().clean_up()  # as the reference after a failed attempt


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
