"""A shard's files in a local directory: which forms are there, what they occupy, what to drop.

The one owner of that knowledge. A shard has a raw form (what readers map) and, when written with
compression, a zip form; each form is one file (MDS) or two (meta + data: JSONL, XSV). A form
counts as present only when all its files are. Readers (the reference's `set_up_local` and
`evict`), the cache's preparation and accounting, and the start-up staleness check all ask here,
so there is one answer to "what does this shard occupy on disk". Files only: no storage, no
shared state.
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from streaming.format.index import FileInfo, ShardEntry, check_basename

__all__ = ["RAW", "ZIP", "CacheRefresh", "KeptShard", "ShardFiles", "SourceRanges",
           "drop_changed_files", "drop_kept", "drop_rewritten", "list_files"]

RAW, ZIP = 0, 1  # which form, as an index into a (raw, zip) file pair

FilePair = tuple[FileInfo, "FileInfo | None"]


@dataclass(frozen=True)
class SourceRanges:
    """Where a shard's one raw file comes from when it is part of a bigger remote file.

    A Parquet shard read in place (`streaming.format.parquet`) is some row groups (and maybe
    some columns) of a file at the remote: its cache file is a sparse copy of that file holding
    only `ranges` at their own offsets (so Parquet readers open it as the file itself), and its
    footer must hash to `footer_digest` (else the file changed after it was indexed).

    Attributes:
        source: the remote file, relative to the stream's remote directory.
        source_bytes: the remote file's size (the sparse copy's length).
        ranges: sorted, disjoint ``(start, end)`` byte ranges to fetch, the footer's included.
        footer_digest: `streaming.format.parquet.footer.footer_digest` of the last
            `footer_bytes` bytes of the file.
        footer_bytes: bytes of the footer, its length and magic included.
    """

    source: str
    source_bytes: int
    ranges: tuple[tuple[int, int], ...]
    footer_digest: str
    footer_bytes: int

    @property
    def whole(self) -> bool:
        """Whether the ranges cover the whole file (then it is downloaded as one object)."""
        return self.ranges == ((0, self.source_bytes),)


@dataclass(frozen=True)
class ShardFiles:
    """The files of one shard under `local_dir`, as its index entry describes them.

    Args:
        local_dir: the stream's cache directory (dataset dir + split).
        pairs: (raw, zip-or-None) per file of the shard, meta before data.
        compression: the zip form's compression spec (``"zstd:7"``), None if it has none.
        source_ranges: for a shard that is part of a bigger remote file, which bytes of it.
    """

    local_dir: str
    pairs: tuple[FilePair, ...]
    compression: str | None
    source_ranges: SourceRanges | None = None

    @property
    def compressed(self) -> bool:
        return self.compression is not None

    def path(self, info: FileInfo) -> str:
        return os.path.join(self.local_dir, check_basename(info.basename))

    def form(self, which: int) -> list[FileInfo]:
        """The files of the raw (`RAW`) or compressed (`ZIP`) form."""
        return [pair[which] for pair in self.pairs if pair[which] is not None]  # type: ignore[misc]

    # -- what is there ---------------------------------------------------------------------

    def present(self, which: int, listing: set[str] | None = None) -> bool:
        """Whether every file of a form exists (in `listing` if given, else on disk)."""
        infos = self.form(which)
        exists = (lambda p: p in listing) if listing is not None else os.path.isfile
        return bool(infos) and all(exists(self.path(info)) for info in infos)

    def raw_present(self) -> bool:
        """Whether the shard is readable as it is: a few `stat` calls, no reads."""
        return self.present(RAW)

    def resident_bytes(self) -> int:
        """Bytes of the shard's files on disk now, each counted at its size in the index.

        The cache counts this after every preparation rather than adding deltas, so a file
        deleted behind its back can never stay counted (nor be counted twice once re-fetched).
        """
        return sum(info.bytes for pair in self.pairs for info in pair
                   if info is not None and os.path.isfile(self.path(info)))

    # -- sizes per the index ---------------------------------------------------------------

    @property
    def raw_bytes(self) -> int:
        return sum(info.bytes for info in self.form(RAW))

    @property
    def zip_bytes(self) -> int | None:
        """Bytes of the compressed form, or None if the shard has none."""
        if any(pair[ZIP] is None for pair in self.pairs):
            return None
        return sum(info.bytes for info in self.form(ZIP))

    @property
    def max_bytes(self) -> int:
        """Bytes on disk while both forms are resident (during decompression)."""
        return self.raw_bytes + (self.zip_bytes or 0)

    def persistent_bytes(self, keep_zip: bool) -> int:
        """Bytes the shard keeps on disk once prepared."""
        return self.max_bytes if self.compressed and keep_zip else self.raw_bytes

    # -- changes ---------------------------------------------------------------------------

    def remove(self, which: int, only_as_indexed: bool = False) -> int:
        """Delete the files of a form that exist; returns their bytes per the index.

        A file reached through a symlinked directory that leads out of `local_dir` is never
        deleted (an index naming ``link/file`` deleted the file the link led to). With
        `only_as_indexed`, neither is one whose size differs from the index's: the cache
        writes whole files of the indexed size, so anything else is not its to delete (an index
        naming a file of the user's, in the folder given as `local`, deleted it).
        """
        freed = 0
        for info in self.form(which):
            path = self.path(info)
            if not self._inside(path):
                continue
            try:
                if only_as_indexed and os.stat(path).st_size != info.bytes:
                    continue
                os.remove(path)
            except FileNotFoundError:
                continue
            freed += info.bytes
        return freed

    def _inside(self, path: str) -> bool:
        """Whether `path`'s directory is, once symlinks are resolved, inside `local_dir`."""
        root = os.path.realpath(self.local_dir)
        parent = os.path.realpath(os.path.dirname(path))
        return os.path.commonpath([root, parent]) == root

    def reconcile(self, listing: set[str], keep_zip: bool, sole_copy: bool = False) -> int:
        """Bring the shard's files to a state the cache can trust; return the bytes kept.

        A form counts only if all its files are listed; a partial form is deleted. With
        compression and `keep_zip`, raw files without their zip are deleted (the zip is the
        copy to keep). Without `keep_zip`, when both forms are present the zip is deleted and the
        raw kept. QUIRK fixed: the reference meant to do that but deleted the raw files instead
        (while still counting them), forcing a needless re-decompression.

        `sole_copy` (no remote holds the shard): raw files without their zip are the data
        itself (a cache filled with a remote, then read local-only) and are kept; the reference
        deleted them, and the dataset with them. So are the files of a partial form there (a
        JSONL shard that lost its `.meta` kept its data file only until it was opened).
        Deletions here take only files of the size the index gives (see `remove`).

        Raises:
            ValueError: a compressed form exists although the shard was not compressed.
        """
        has_raw, has_zip = (self._keep_whole(which, listing, sole_copy) for which in (RAW, ZIP))
        if self.compressed:
            if keep_zip and has_raw and not has_zip and not sole_copy:
                self.remove(RAW, only_as_indexed=True)
                has_raw = False
            elif not keep_zip and has_raw and has_zip:
                self.remove(ZIP, only_as_indexed=True)
                has_zip = False
        elif has_zip:
            raise ValueError("Shard is invalid: compression was not used, but has a compressed "
                             "form.")
        return (self.raw_bytes if has_raw else 0) + ((self.zip_bytes or 0) if has_zip else 0)

    def _keep_whole(self, which: int, listing: set[str], sole_copy: bool) -> bool:
        """Whether a form is wholly listed; a partially listed one is deleted, unless it is the
        only copy of its data."""
        infos = self.form(which)
        listed = sum(self.path(info) in listing for info in infos)
        if 0 < listed < len(infos) and not sole_copy:
            self.remove(which, only_as_indexed=True)
        return bool(infos) and listed == len(infos)


def list_files(local_dir: str) -> set[str]:
    """Every file path under `local_dir` (one walk, shared by all shards of a stream)."""
    listing: set[str] = set()
    for dirname, _, files in os.walk(local_dir):
        listing.update(os.path.join(dirname, name) for name in files)
    return listing


@dataclass(frozen=True)
class KeptShard:
    """A shard whose cached files stay only because the index lists them with unchanged sizes
    and no digest: the basenames of all its files (the remote holds some of them: the zip form
    of a compressed shard, else the raw one) and those in the cache."""

    names: tuple[str, ...]
    cached: tuple[str, ...]


@dataclass(frozen=True)
class CacheRefresh:
    """What `drop_changed_files` (or `drop_rewritten`) did to a cache when the index changed."""

    removed: list[str]  # basenames deleted: the new index describes them differently, or not
    unverified: list[KeptShard]  # shards kept on unchanged sizes alone


def drop_changed_files(local_dir: str, old: Iterable[ShardEntry],
                       new: Sequence[ShardEntry]) -> CacheRefresh:
    """Delete files of `local_dir` that the new index describes differently, or not at all.

    The reference trusts a cached index.json forever, so a dataset rewritten in place is read
    with a stale shard list. Comparing the cached index with the remote's and deleting the files
    whose recorded size or digests changed (or whose shard disappeared) makes them fetched again.

    A file the index gives no digest for, and whose size did not change, is kept: a dataset that
    grew by new shards must not be fetched again whole. But a dataset rewritten in place with
    samples of the same sizes (fixed-length tokens) looks the same, so such shards are returned
    as `unverified`, for `drop_rewritten` to judge by the remote's modification times.
    """
    after = {info.basename: info for entry in new for info in entry.files()}
    removed: list[str] = []
    unverified: list[KeptShard] = []
    for entry in old:
        infos = list(entry.files())
        cached = []
        for info in infos:
            path = os.path.join(local_dir, check_basename(info.basename))
            if after.get(info.basename) == info:
                if not info.hashes and os.path.exists(path):
                    cached.append(info.basename)
                continue
            if os.path.exists(path):
                os.remove(path)
                removed.append(info.basename)
            # A shard read in place also leaves projected copies `<name>.c<key>` (Parquet).
            for copy in glob.glob(glob.escape(path) + ".c" + "[0-9a-f]" * 8):
                os.remove(copy)
                removed.append(os.path.relpath(copy, local_dir))
        if cached:
            unverified.append(KeptShard(tuple(info.basename for info in infos), tuple(cached)))
    return CacheRefresh(removed, unverified)


def drop_kept(local_dir: str, kept: Iterable[KeptShard]) -> list[str]:
    """Delete the cached files of every kept shard (their copy cannot be vouched for: the cache
    was filled from another remote); returns the basenames deleted."""
    removed: list[str] = []
    for shard in kept:
        for name in shard.cached:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(local_dir, name))
                removed.append(name)
    return removed


def drop_rewritten(local_dir: str, kept: Iterable[KeptShard],
                   remote_times: Mapping[str, float], since: float | None = None
                   ) -> CacheRefresh:
    """Delete the cached files of each kept shard whose remote file was modified after `since`
    (a time by the server's clock after which nothing cached was rewritten), or, without it,
    after the oldest of them was written here: the dataset was rewritten in place since.

    `remote_times` is the remote's listing (`Store.list_modified`). A shard none of whose files
    it lists cannot be judged and is returned as still `unverified`. Against our own clock, a
    server clock ahead of ours can only make a file look newer, which costs a download, never a
    stale read.
    """
    removed: list[str] = []
    unknown: list[KeptShard] = []
    for shard in kept:
        remote = [remote_times[name] for name in shard.names if name in remote_times]
        if not remote:
            unknown.append(shard)
            continue
        paths = [os.path.join(local_dir, name) for name in shard.cached]
        try:
            written = min(os.stat(path).st_mtime for path in paths) if since is None else since
        except FileNotFoundError:  # dropped meanwhile: fetched again anyway
            continue
        if max(remote) > written:
            for name, path in zip(shard.cached, paths, strict=True):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
                    removed.append(name)
    return CacheRefresh(removed, unknown)
