"""A download-only store whose objects some code of the user's fetches one whole file at a time.

The reference let users bring their own downloading in two ways: a `CloudDownloader` class in
`DOWNLOADER_MAPPINGS`, and a `Stream` subclass overriding `_download_file`. Both become stores
of this kind, so the cache's retries, size and hash checks and atomic placement stay the ones
every other store gets (`streaming.storage.transfer.fetch`): the user's code writes the file
it is given. Such code cannot list, upload or read part of a file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from abc import abstractmethod
from collections.abc import Callable, Iterator

from streaming.atomic import discard
from streaming.defaults import DEFAULT_TIMEOUT
from streaming.errors import StreamingError
from streaming.storage.base import ProgressFn, Store
from streaming.storage.store_errors import AccessDeniedError, ObjectNotFoundError
from streaming.storage.user_code_errors import mark_as_users

__all__ = ["NamedFileStore", "WholeFileStore"]


class WholeFileStore(Store):
    """Objects under `url`, each fetched whole into a local file by `fetch_file`."""

    supports_writes = False
    supports_listing = False
    supports_ranges = False

    @property
    @abstractmethod
    def fetcher(self) -> str:
        """Who fetches, for messages (``"MyDownloader (DOWNLOADER_MAPPINGS)"``)."""

    @abstractmethod
    def fetch_file(self, path: str, local_path: str, timeout: float) -> None:
        """Write the object at `path` into `local_path` (absent beforehand)."""

    def failed(self) -> None:
        """Called after a failed attempt, before the error goes on (to drop a broken client)."""

    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        timeout = DEFAULT_TIMEOUT if deadline is None else max(deadline - time.monotonic(), 1e-3)
        if os.path.exists(local_path):  # the reference's fetchers keep a file already there
            os.remove(local_path)
        try:
            with self._own_errors(path):
                self.fetch_file(path, local_path, timeout)
        except BaseException:
            self.failed()
            raise
        if not os.path.isfile(local_path):
            raise self.not_found(path)
        size = os.path.getsize(local_path)
        if progress is not None:
            progress(size)
        return size

    @contextlib.contextmanager
    def _own_errors(self, path: str) -> Iterator[None]:
        """`Store._errors`, keeping the user's code's own error in view: a `FileNotFoundError`
        or `PermissionError` it raised may be about a file of its own (a staging folder it
        forgot to create), not the remote's object, so its text joins ours and it is the
        cause. Any other error of theirs is marked, so that the error given after the last
        attempt is also of their type (`user_code_errors`)."""
        try:
            with self._errors(path):
                try:
                    yield
                except Exception as raised:
                    if not isinstance(raised, StreamingError):
                        mark_as_users(raised)  # its type is kept if we give up on it
                    raise
        except (ObjectNotFoundError, AccessDeniedError) as ours:
            theirs = ours.__context__
            if theirs is None or isinstance(theirs, StreamingError):
                raise
            raise type(ours)(f"{ours} ({self.fetcher} raised {type(theirs).__name__}: "
                             f"{theirs})") from theirs

    def get(self, path: str) -> bytes:
        with tempfile.TemporaryDirectory(prefix="shardstream-get-") as scratch:
            local = os.path.join(scratch, "object")
            self.download(path, local)
            with open(local, "rb") as file:
                return file.read()

    def get_range(self, path: str, start: int, end: int) -> bytes:
        return self.get(path)[start:end]  # whole files only

    def size(self, path: str) -> int:
        return len(self.get(path))

    def upload(self, local_path: str, path: str) -> None:
        raise NotImplementedError(
            f"{self.fetcher} only downloads; upload to {self.url_for(path)} through a store "
            "(streaming.storage.register_store).")

    def list(self, prefix: str = "") -> list[str]:
        raise NotImplementedError(f"{self.fetcher} cannot list {self.url}.")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, {self.fetcher})"


class NamedFileStore(WholeFileStore):
    """Objects fetched by `fetch(name, scratch_name)`, which writes the object `name` into its
    own directory as `scratch_name` and returns that file's path: the reference's
    `Stream._download_file` hook, overridden by a subclass (a mirror, signed URLs).

    The scratch name is hidden and new each time, so a hook that keeps a file already there
    still fetches; the file then moves where the cache wants it. A hook calling
    `super()._download_file` reaches the remote's own store, not this one.
    """

    def __init__(self, url: str, fetch: Callable[[str, str], str], fetcher: str) -> None:
        super().__init__(url)
        self.fetch = fetch
        self._fetcher = fetcher

    @property
    def fetcher(self) -> str:
        return self._fetcher

    def fetch_file(self, path: str, local_path: str, timeout: float) -> None:
        got = self.fetch(path, f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.fetching")
        try:
            shutil.move(got, local_path)
        finally:
            discard(got)
