"""A stream's `index.json` in the node's cache: read the remote's, fall back, cache, drop stale.

The one owner of the cached index. With a remote, its current index is read (with the stream's
retries and per-attempt deadline) and parsed before anything is cached, so a changed remote index
wins over the cached one and a broken one never replaces a good copy. If the remote's index
cannot be read at all (missing, refused, unreachable, failing) but a cached copy exists, that copy
is used with one `RemoteUnavailableWarning`: training goes on from a warmed cache. Caching a new
index (once per node) deletes the cached files it no longer vouches for, and those the remote
rewrote since they were cached (by its listing's modification times, for files the index gives
no digest); an `UnverifiedCacheWarning` names any it cannot judge. The machine records the remote a
cache directory was filled from (in the per-user state dir): reused for another remote, the
cache keeps no file on its size alone. An index that reads the same but was written at the
remote after the cached copy (a dataset rewritten in place with the same layout) has its
undigested files judged the same way.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from streaming.cache.origins import read_origin, record_origin
from streaming.errors import (
    IndexFormatError,
    RemoteUnavailableWarning,
    UnverifiedCacheWarning,
)
from streaming.format.fileio import open_regular, write_atomic
from streaming.format.index import (
    IN_PLACE_VERSION,
    ShardEntry,
    get_index_basename,
    parse_index,
)
from streaming.format.shard_files import (
    KeptShard,
    drop_changed_files,
    drop_kept,
    drop_rewritten,
)
from streaming.format.shard_table import (
    TABLE_MIN_SHARDS,
    TABLE_SUFFIX,
    ShardTable,
    index_key,
    load_table,
    parse_table,
    save_table,
)
from streaming.storage.local import local_path_of
from streaming.storage.transfer import read, read_stamped

__all__ = ["IndexCache", "LoadedIndex"]

log = logging.getLogger(__name__)

# An index shorter than this cannot list `TABLE_MIN_SHARDS` shards (an entry takes well over 64
# bytes), so there is no table at the remote to look for: small datasets cost no extra request.
_TABLE_MIN_TEXT = TABLE_MIN_SHARDS * 64


@dataclass(frozen=True)
class LoadedIndex:
    """An index as read: its bytes, where it came from, and its binary table if one matched.

    The entries are parsed on first use: with a table, construction needs none of them.
    """

    text: bytes
    where: str  # the URL or path it was read from (errors name it)
    from_remote: bool  # read from the remote (and so to be cached), not the cached copy
    table: ShardTable | None = None  # the `ShardTable` of exactly this text, if any
    table_on_disk: bool = False  # the table is the cache's file (else the remote's, in memory)
    remote_time: float | None = None  # its modification time at the remote, if it says

    @cached_property
    def key(self) -> str:
        return index_key(self.text)

    @cached_property
    def entries(self) -> list[ShardEntry]:
        """Every entry, parsed and checked (see `parse_index`)."""
        return parse_index(self.text, self.where)


class IndexCache:
    """The cached `index.json` of one stream.

    Args:
        local_dir: the stream's cache directory.
        store: a `streaming.storage.Store` at the stream's remote, or None (local data).
        remote: the remote's name for messages.
        retries: total attempts to read the remote index.
        timeout: seconds per attempt.
    """

    def __init__(self, local_dir: str, store: Any | None, remote: str | None, retries: int,
                 timeout: float) -> None:
        self.local_dir, self.store, self.remote = local_dir, store, remote
        self.retries, self.timeout = retries, timeout

    @property
    def path(self) -> str:
        return os.path.join(self.local_dir, get_index_basename())

    @property
    def table_path(self) -> str:
        """Where the binary table of the cached index lives (`index.json.table`)."""
        return self.path + TABLE_SUFFIX

    def load(self) -> LoadedIndex:
        """The index to use (see the module docstring for which).

        Raises:
            RuntimeError: no remote and no local index (the reference's message).
            FileNotFoundError, PermissionError, TransferError: the remote's index cannot be
                read and there is no cached copy.
            IndexFormatError: the index read is malformed (naming its URL or path).
        """
        if self.store is None:
            if not os.path.exists(self.path):
                raise RuntimeError(
                    f"No `remote` provided, but local file {self.path} does not exist either"
                )
            return self._cached()

        try:
            text, stamp = read_stamped(self.store, get_index_basename(), retries=self.retries,
                                       timeout=self.timeout)
        except Exception as err:  # gone, unreachable, refused: train from the cache if we can
            if not os.path.isfile(self.path):
                raise
            if isinstance(err, FileNotFoundError) and self._cached_in_place():
                # An index over files in place written into the cache (`index_parquet(out=)`)
                # for a remote one cannot write to, such as a Hugging Face dataset: expected.
                return self._cached()
            warnings.warn(RemoteUnavailableWarning(
                f"Could not read the index of {self.remote} ({type(err).__name__}: {err}); "
                f"using the cached copy {self.path}. Shards already in the cache are used as they "
                f"are; any other shard is fetched from the remote when needed."), stacklevel=5)
            return self._cached()
        loaded = LoadedIndex(text, self.store.url_for(get_index_basename()), True,
                             remote_time=stamp)
        table = load_table(self.table_path, loaded.key)
        if table is None and len(text) >= _TABLE_MIN_TEXT:
            return self._with_table(loaded, self._fetch_table(loaded.key), on_disk=False)
        return self._with_table(loaded, table)

    def _cached_in_place(self) -> bool:
        """Whether the cached index is one over files in place (its `version` says so; the key
        sorts after `shards`, so it is at the end of the file, not at its start)."""
        try:
            with open_regular(self.path) as f:
                obj = json.load(f)
        except (OSError, ValueError, RecursionError):
            return False
        return isinstance(obj, dict) and obj.get("version") == IN_PLACE_VERSION

    def _fetch_table(self, key: str) -> ShardTable | None:
        """The remote's binary table (written by our writers beside a big index) if it is the
        table of exactly this index; anything else is ignored (the index is parsed as usual).
        `parse_table` checks it like a table of our own. It is cached with the index, by the
        node's set-up: a construction that fails before (a cache limit too small) leaves no
        table behind."""
        name = get_index_basename() + TABLE_SUFFIX
        assert self.store is not None
        try:
            data = read(self.store, name, retries=1, timeout=self.timeout)
        except Exception as err:  # absent (an index the reference wrote) or unreadable
            log.debug("No usable shard table at the remote (%s: %s)", type(err).__name__, err)
            return None
        return parse_table(data, key, self.store.url_for(name))

    def _cached(self) -> LoadedIndex:
        with open_regular(self.path) as f:
            text = f.read()
        loaded = LoadedIndex(text, self.path, False)
        return self._with_table(loaded, load_table(self.table_path, loaded.key))

    def _with_table(self, loaded: LoadedIndex, table: ShardTable | None,
                    on_disk: bool = True) -> LoadedIndex:
        """The index with its binary `table`, or parsed when there is none (so a malformed
        index fails here, before anything is cached).

        A table stands for a parse that succeeded when it was built: ours after parsing, or the
        writer's beside the index it wrote. Its entries are still parsed and checked one by one,
        against the table, as their readers are built (`streaming.format.shard_readers`)."""
        if table is None:
            _ = loaded.entries
            return loaded
        return replace(loaded, table=table, table_on_disk=on_disk)

    def save_table(self, table: ShardTable) -> None:
        """Cache the binary table of an index (best effort: a read-only dataset directory just
        means the next construction parses the index again)."""
        try:
            os.makedirs(self.local_dir, exist_ok=True)
            save_table(self.table_path, table)
        except OSError as err:
            log.debug("Could not cache the shard table %s: %s", self.table_path, err)

    def commit(self, loaded: LoadedIndex) -> None:
        """Cache an index read from the remote, deleting files it no longer vouches for.

        Runs once per node, after the index parsed and its readers were built, so an index that
        cannot be used is never cached. A cached copy that cannot be parsed (an older bad
        download, a truncated write) vouches for nothing: nothing is dropped, it is replaced.
        """
        if not loaded.from_remote:
            return
        os.makedirs(self.local_dir, exist_ok=True)
        origin, seen = self._origin()
        where = _place(loaded.where)
        if origin != where:
            seen = None  # a time read from another remote says nothing of this one
        if os.path.exists(self.path):
            with open(self.path, "rb") as f:
                old = f.read()
            # The same text from the remote that filled the cache vouches for every file; from
            # another remote it says nothing of the files kept on their size alone.
            if old == loaded.text and origin in (None, where):
                self._judge_if_rewritten(loaded, seen)
                self._record_origin(origin, where, seen, loaded.remote_time)
                return
            try:
                refresh = drop_changed_files(self.local_dir, parse_index(old, self.path),
                                             loaded.entries)
            except IndexFormatError as err:  # includes unsafe file names in the old copy
                log.warning("Replacing the unusable cached index %s (%s).", self.path, err)
            else:
                if origin is not None and origin != where:
                    self._drop_from_elsewhere(refresh.unverified, origin)
                else:
                    self._judge_unverified(refresh.unverified, since=seen)
        write_atomic(self.path, [loaded.text])
        self._record_origin(origin, where, seen, loaded.remote_time)

    def _judge_if_rewritten(self, loaded: LoadedIndex, seen: float | None) -> None:
        """The remote's index reads as the cached copy does, but was written again at the
        remote since this cache read it: a dataset rewritten in place with the same layout
        (fixed-length tokens from another tokenizer) has an index identical to the byte. Its
        cached files with no digest are then judged as after a changed index.

        "Since" is `seen`, the remote index's time when this machine last read it, so the
        server's clock is compared with itself. Without it (the record lost with the temp dir,
        a cache another user or machine filled, one read before records were kept) it is the
        cached copy's own time, and each file's: a server clock ahead of ours then costs a
        download, never a stale read. A writer's `MDSWriter(out=(local, remote))` gives its
        local index the remote's time (`storage.sink`), so its directory reads as current."""
        remote_time = loaded.remote_time
        if remote_time is None:
            return
        try:
            if seen is None:
                if remote_time <= os.stat(self.path).st_mtime:
                    return
            elif remote_time <= seen:
                return
            entries = loaded.entries
            self._judge_unverified(drop_changed_files(self.local_dir, entries, entries).unverified,
                                   "was written again", since=seen)
            if seen is None:
                os.utime(self.path)  # judged: the next start without a record costs no listing
        except OSError as err:  # a cache this user may not change (another's, read-only)
            warnings.warn(UnverifiedCacheWarning(
                f"The index of {self.remote} was written again since {self.local_dir} read it, "
                f"but its cached files could not be checked ({type(err).__name__}: {err}); "
                f"they are used as they are, stale if the dataset was rewritten in place."),
                stacklevel=2)

    def _origin(self) -> tuple[str | None, float | None]:
        """The remote index this cache was filled from (`streaming.cache.origins`), in the
        form `_place` gives, and its time at the remote when this cache last read it."""
        where, seen = read_origin(self.local_dir)
        return (None if where is None else _place(where)), seen

    def _record_origin(self, recorded: str | None, where: str, seen: float | None,
                       remote_time: float | None) -> None:
        if recorded != where or seen != remote_time:
            record_origin(self.local_dir, where, remote_time)

    def _drop_from_elsewhere(self, kept: list[KeptShard], origin: str) -> None:
        """The cache was filled from another remote: a file kept only on its size says nothing
        about this remote's file of the same name (nor do modification times), so it goes."""
        removed = drop_kept(self.local_dir, kept)
        if removed:
            log.warning("%s was filled from %s, not %s: deleted %d cached file(s) with no "
                        "digest to tell them apart, to be fetched from %s.", self.local_dir,
                        os.path.dirname(origin), self.remote, len(removed), self.remote)

    def _judge_unverified(self, kept: list[KeptShard], what: str = "changed",
                          since: float | None = None) -> None:
        """Drop the kept shards the remote rewrote since they were cached, by its listing's
        modification times (after `since`, the index's remote time when this cache last read
        it, when known); warn about those it cannot judge (no times, no listing). `what` says
        what happened to the index ("changed", or "was written again" unchanged)."""
        if not kept:
            return
        times = self._remote_times(kept, what)
        if times is not None:
            refresh = drop_rewritten(self.local_dir, kept, times, since)
            if refresh.removed:
                log.info("The index of %s %s and %d cached file(s) were rewritten at the "
                         "remote since: deleted, to be fetched again.", self.remote, what,
                         len(refresh.removed))
            kept = refresh.unverified
        if not kept:
            return
        names = [name for shard in kept for name in shard.cached]
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        warnings.warn(UnverifiedCacheWarning(
            f"The index of {self.remote} {what} since {self.local_dir} cached it. "
            f"{len(names)} cached file(s) ({shown}) have the same size in both indexes, no "
            f"digest to compare and no modification time at the remote to go by, so they are "
            f"kept as they are: right if the dataset only grew, stale if it was rewritten in "
            f"place. After an in-place rewrite, delete the cache directory (or write the dataset "
            f"with `hashes=[...]`, whose digests tell a rewritten file apart)."), stacklevel=2)


    def _remote_times(self, kept: list[KeptShard], what: str) -> dict[str, float] | None:
        """The remote's modification times of the kept shards' files: from one listing of the
        whole remote, or, where it cannot list (a web server), from each file's own time (a
        HEAD per file, a few at a time). None when it can say neither."""
        if self.store is None:
            return None
        store = self.store
        # The remote is listed whole (a request per 1,000 objects on S3), or asked per file:
        # either way a long start after a big dataset's index changed says why.
        log.info("The index of %s %s: asking it the modification times of %d cached shard(s) "
                 "that have no digest.", self.remote, what, len(kept))
        try:
            if store.supports_listing:
                return store.list_modified()
            names = [name for shard in kept for name in shard.names]
            with ThreadPoolExecutor(min(8, len(names)),
                                    thread_name_prefix="shardstream-times") as pool:
                found = dict(zip(names, pool.map(_time_of(store), names), strict=True))
        except Exception as err:  # listing refused (a read-only policy) or failing
            log.debug("Could not ask %s for modification times (%s: %s)", self.remote,
                      type(err).__name__, err)
            return None
        return {name: when for name, when in found.items() if when is not None}


def _time_of(store: Any) -> Callable[[str], float | None]:
    """`store.modified`, with a file the remote does not hold (a compressed shard's raw form)
    answering None."""
    def modified(name: str) -> float | None:
        try:
            return store.modified(name)
        except FileNotFoundError:
            return None
    return modified


def _place(where: str) -> str:
    """One spelling of an index's location: a local path (or ``file://`` URL) resolved, so a
    remote given as a relative path, with a trailing slash or through a symlink is the same
    origin (each spelling deleted the cache's files kept on their size), a URL as it is; a
    ``file://`` URL is read as `local_path_of` reads it."""
    if "://" in where and not where.startswith("file://"):
        return where
    try:
        return os.path.realpath(local_path_of(where))  # %20, file://localhost/, ~
    except ValueError:  # a file:// URL naming another host: kept as written
        return where
