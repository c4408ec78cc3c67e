"""`Stream`: one data source of a dataset — where its shards live and how much of it to use.

Holds configuration and paths, loads the stream's index into shard readers, and prepares a
shard's files on request through `streaming.cache.prepare`. Weighting arithmetic lives in
`streaming.order.weighting`; this class only validates and records the results.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from streaming.atomic import discard, drop_dead_temps
from streaming.cache.index_cache import IndexCache, LoadedIndex
from streaming.cache.prepare import ShardSource, prepare_shard_files
from streaming.dataset_config import StreamDefaults, check_download_settings, checked_columns
from streaming.errors import IndexFormatError
from streaming.format.index import check_basename, get_index_basename, naming_index
from streaming.format.read_options import ReadOptions
from streaming.format.shard_files import list_files
from streaming.format.shard_readers import ShardReaders, build_readers
from streaming.format.shard_table import TABLE_MIN_SHARDS, ShardTable, table_file_size
from streaming.order.weighting import StreamWeights, check_stream_weights
from streaming.plugins import TypedRegistry, create_registry
from streaming.storage import open_store
from streaming.storage.local import names_directory
from streaming.storage.transfer import fetch
from streaming.storage.whole_file_store import NamedFileStore
from streaming.stream_weights import WeightViews

if TYPE_CHECKING:
    from streaming.format.reader import Reader
    from streaming.order.world import World

__all__ = ["Stream", "index_bytes", "streams_registry"]

_DEFAULTS = StreamDefaults()  # a stream's knobs when neither it nor a dataset sets them

class Stream(WeightViews):
    """A dataset, or one of several mixed sources of a dataset.

    Args:
        remote: where the shards live (any supported URL, or a local path); None if the data is
            already in `local`.
        local: the cache directory; a temp directory derived from `remote` when None.
        split: optional subdirectory of both.
        proportion: relative weight among streams (all streams use it, or none does).
        repeat: multiplier on this stream's sample count per epoch.
        choose: exact number of samples per epoch.
        download_retry: total download attempts per file (dataset default if None).
        download_timeout: seconds per attempt (dataset default if None).
        validate_hash: hash algorithm to check downloaded files against.
        keep_zip: keep compressed files after decompressing them.
        columns: for Parquet files indexed in place, the only columns to read (and fetch:
            only their bytes leave the remote); None for all.

    `proportion`, `repeat` and `choose` read as in the reference: the weight given, then all
    three once a dataset derived them (`derived_weights`); one neither given nor derived is an
    `AttributeError`. The knobs left None read as the dataset's (`apply_default`), else as its
    defaults.
    """

    def __init__(
        self,
        *,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        proportion: float | None = None,
        repeat: float | None = None,
        choose: int | None = None,
        download_retry: int | None = None,
        download_timeout: float | None = None,
        validate_hash: str | None = None,
        keep_zip: bool | None = None,
        columns: Sequence[str] | None = None,
    ) -> None:
        self.remote = remote
        self._local = local
        self.split = split or ""
        check_stream_weights(proportion, repeat, choose)
        self.given_weights = StreamWeights(proportion, repeat, choose)
        self.derived_weights: StreamWeights | None = None  # set when a dataset derives them
        check_download_settings(download_retry, download_timeout)
        self._download_retry, self._download_timeout = download_retry, download_timeout
        self._keep_zip = keep_zip
        self._safe_keep_zip: bool | None = None  # as set by the user; else derived
        self._inherited: dict[str, Any] = {}  # the dataset's values for the knobs left None
        self.validate_hash = validate_hash
        self.columns = checked_columns(columns) if columns is not None else None
        self.local = (os.path.expanduser(local) if local is not None  # `~` as in `remote=`
                      else self._get_temporary_directory())
        self._store: Any | None = None
        self._index_size: int | None = None  # bytes of the index loaded by `get_shards`
        self._pending_index: LoadedIndex | None = None  # read from the remote, not cached yet
        self._pending_table: ShardTable | None = None  # its binary table, cached along with it
        if remote is not None:
            self._open_store()  # an unsupported scheme fails here, at construction

    # ----------------------------------------------------------------------------- configuration

    def _get_temporary_directory(self) -> str:
        if self.remote is None:
            # Nothing to key a cache by: as in the reference, an existing directory (always the
            # case without a split: it is the temp dir itself) is refused rather than adopted.
            path = os.path.join(tempfile.gettempdir(), "", self.split)
            if os.path.exists(path):
                raise FileExistsError(
                    f"Could not create a temporary local directory {path} because it already "
                    "exists. If you want to reuse the locally cached dataset, explicitly pass in "
                    "a unique local directory with the `local` argument. Otherwise, delete this "
                    "directory and retry.")
            return path
        # Reused if it exists (unlike the reference): keyed by the remote, it holds that data.
        digest = hashlib.blake2s(os.fsencode(self.remote), digest_size=16).hexdigest()
        return os.path.join(tempfile.gettempdir(), digest, self.split)

    def _knob(self, given: Any, name: str) -> Any:
        if given is not None:
            return given
        return self._inherited.get(name, getattr(_DEFAULTS, name))

    # The knobs are assignable, as the reference's attributes are: a value set (in a subclass's
    # `__init__`, or later) counts as given, and later fetches use it.

    @property
    def download_retry(self) -> int:
        return int(self._knob(self._download_retry, "download_retry"))

    @download_retry.setter
    def download_retry(self, value: int) -> None:
        check_download_settings(value, None)
        self._download_retry = value

    @property
    def download_timeout(self) -> float:
        return self._knob(self._download_timeout, "download_timeout")  # as given

    @download_timeout.setter
    def download_timeout(self, value: float) -> None:
        check_download_settings(None, value)
        self._download_timeout = value

    @property
    def keep_zip(self) -> bool:
        return bool(self._knob(self._keep_zip, "keep_zip"))

    @keep_zip.setter
    def keep_zip(self, value: bool) -> None:
        self._keep_zip = value

    @property
    def safe_keep_zip(self) -> bool:
        """`keep_zip`, forced on when the local directory holds the only copy (or as set)."""
        if self._safe_keep_zip is not None:
            return self._safe_keep_zip
        return self.keep_zip or not self.has_remote_copy

    @safe_keep_zip.setter
    def safe_keep_zip(self, value: bool) -> None:
        if not value and not self.has_remote_copy:
            raise ValueError(f"`safe_keep_zip` must stay True for stream {self.local_dir!r}: its "
                             "local directory holds the only copy of the compressed shards.")
        self._safe_keep_zip = bool(value)

    def apply_default(self, default: dict[str, Any]) -> None:
        """Fill the knobs this stream left unset from the dataset's values."""
        if not (self.remote or self._local):
            raise ValueError("`remote` and/or `local` path must be provided")
        if not self.split:
            self.split = default["split"] or ""
        if self.validate_hash is None:
            self.validate_hash = default["validate_hash"] or None
        self._inherited = {name: default[name]
                           for name in ("download_retry", "download_timeout", "keep_zip")}

    # ------------------------------------------------------------------------------------- paths

    @property
    def local_dir(self) -> str:
        """This stream's cache directory (local + split)."""
        return os.path.join(self.local, self.split)

    @property
    def remote_dir(self) -> str | None:
        """This stream's remote directory (remote + split), or None."""
        if self.remote is None:
            return None
        return os.path.join(self.remote, self.split) if self.split else self.remote

    def _open_store(self) -> Any:
        if self._store is None and self.remote_dir is not None:
            self._store = open_store(self.remote_dir)
        return self._store

    @property
    def has_remote_copy(self) -> bool:
        """Whether the shards can be fetched again: False when the local directory holds the
        only copy (no remote, or the remote names the local directory, however it is spelled:
        a trailing slash, ``file://``), so they are never replaced, deleted or evicted."""
        key = (self.remote, self.local)
        known = self.__dict__.get("_ss_remote_copy")
        if known is None or known[0] != key:  # two realpaths: asked ~9 times per stream
            known = (key, self.remote is not None and not names_directory(self.remote,
                                                                          self.local))
            self.__dict__["_ss_remote_copy"] = known
        return known[1]

    def _fetch_store(self) -> Any:
        """The store the index and shards are fetched from: the remote's, or, when a subclass
        overrides the reference's `_download_file` hook, one fetching through it."""
        if type(self)._download_file is Stream._download_file or self.remote_dir is None:
            return self._open_store()
        return NamedFileStore(self.remote_dir, self._download_file,
                              f"{type(self).__name__}._download_file")

    def source(self) -> ShardSource:
        """What `prepare_shard_files` needs to know about this stream."""
        return ShardSource(
            local_dir=self.local_dir,
            store=self._fetch_store() if self.has_remote_copy else None,
            keep_zip=self.safe_keep_zip,
            validate_hash=self.validate_hash,
            retries=self.download_retry,
            timeout=self.download_timeout,
        )

    # ----------------------------------------------------------------------------------- shards

    def index_cache(self) -> IndexCache:
        """This stream's cached index.json (reading, falling back, caching: `IndexCache`)."""
        source = self.source()
        return IndexCache(self.local_dir, source.store, self.remote_dir, source.retries,
                          source.timeout)

    def get_shards(self, world: World | None = None,
                   allow_unsafe_types: bool = False) -> ShardReaders:
        """Load this stream's index into shard readers, refusing unsafe encodings unless allowed.

        The remote index is parsed (and its readers built) before anything is cached. Caching it
        is part of the node's cache set-up (`set_up_local`, done by one process per node) so no
        process ever depends on a file another one may not have written yet; with `world=None`
        (no dataset, no node to coordinate) it is cached here. An index seen before (its exact
        text) is not parsed again: its binary table (`streaming.format.shard_table`) gives what
        construction needs, and each reader is built when its shard is first read.
        """
        cache = self.index_cache()
        loaded = cache.load()
        table_size = 0
        if loaded.table is not None:
            shards = ShardReaders.from_table(loaded.table, self.local, self.split)
            if loaded.table_on_disk:
                table_size = _file_size(cache.table_path)
            else:  # the remote's: cached with the index, by the node's set-up
                self._pending_table = loaded.table
                table_size = table_file_size(loaded.table)
        else:
            try:
                shards = build_readers(loaded.key, loaded.entries, self.local, self.split)
            except IndexFormatError as err:
                raise naming_index(err, loaded.where) from None
            if len(loaded.entries) >= TABLE_MIN_SHARDS:
                if loaded.from_remote:  # cached with the index, by the node's set-up
                    self._pending_table = shards.table
                    table_size = table_file_size(shards.table)
                else:
                    cache.save_table(shards.table)
                    table_size = _file_size(cache.table_path)
        shards.set_read_options(ReadOptions(self.columns, in_place=not self.has_remote_copy))
        unsafe = shards.table.unsafe
        if not allow_unsafe_types and unsafe.any():  # the first unsafe shard raises its error
            shards[int(np.argmax(unsafe))].validate(allow_unsafe_types)
        # The table beside the index counts as index bytes: a cache limit holds both.
        self._index_size = len(loaded.text) + table_size
        self._pending_index = loaded if loaded.from_remote else None
        # The cache directory exists once the index is loaded, as in the reference (whose
        # callers clean it up after a construction error such as a too-small cache limit).
        os.makedirs(self.local_dir, exist_ok=True)
        if world is None:
            self._commit_index()
        return shards

    def _commit_index(self) -> None:
        loaded, self._pending_index = self._pending_index, None
        table, self._pending_table = self._pending_table, None
        if loaded is not None:
            cache = self.index_cache()
            cache.commit(loaded)
            if table is not None:
                cache.save_table(table)
            elif loaded.table is None:  # a table of an earlier, bigger index: not counted
                discard(cache.table_path)

    def prepare_shard(self, shard: Reader) -> int:
        """Ensure `shard`'s raw files are in the cache; returns the change in cache bytes."""
        before = shard.files.resident_bytes()
        prepare_shard_files(self.source(), shard.files)
        return shard.files.resident_bytes() - before

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
        """Fetch one file of this stream's remote into its cache directory, unless a file is
        there already; returns its local path. The reference's hook, kept for subclasses that
        fetch files of their own (shards are fetched by the node cache, not through this).

        Raises:
            ValueError: the file is not in the cache and the stream has no remote.
            UnsafePathError: a name would resolve outside the stream's directories.
        """
        local = os.path.join(self.local_dir, check_basename(to_basename or from_basename))
        if os.path.exists(local):
            return local
        store = self._open_store()
        if store is None:
            raise ValueError("In the absence of local dataset, path to remote dataset must be "
                             "provided")
        fetch(store, check_basename(from_basename), local, retries=self.download_retry,
              timeout=self.download_timeout)
        return local

    def set_up_local(self, shards: Sequence[Reader], cache_usage_per_shard: np.ndarray) -> None:
        """Reconcile the cache directory with the index; record bytes present per shard.

        Called by one process per node: it also caches the index `get_shards` read (dropping
        files the new index no longer vouches for) before looking at what is present. With a
        shard table, shards whose files are all there or all missing are counted from arrays;
        only the others (partly present, or a form to drop) build their readers.
        """
        self._commit_index()
        listing = list_files(self.local_dir)
        # Downloads of a process killed mid-way (its own clean-up never ran).
        listing.difference_update(drop_dead_temps(listing))
        keep_zip, sole = self.safe_keep_zip, not self.has_remote_copy
        tables = shards.part_tables() if isinstance(shards, ShardReaders) else [None]
        # A stream read with options (a projection, files in place) may have other files than
        # its table names: each reader says what it has.
        if len(tables) == 1 and tables[0] is not None and "parquet" not in tables[0].formats:
            prefix = os.path.join(self.local_dir, "")
            names = [path[len(prefix):] for path in listing if path.startswith(prefix)]
            present, check = tables[0].present(names, keep_zip)
            cache_usage_per_shard[:] = present
            todo = np.flatnonzero(check).tolist()
        else:
            todo = range(len(shards))
        for i in todo:
            cache_usage_per_shard[i] = shards[i].set_up_local(listing, keep_zip, sole)
        if len(tables) == 1 and tables[0] is not None and "parquet" in tables[0].formats:
            from streaming.format.parquet.reader import drop_other_projections

            drop_other_projections(shards, listing)  # (only Parquet streams import it)

    def get_index_size(self) -> int:
        """Bytes of this stream's index.json, and of its binary table when the cache keeps one
        (as loaded: the cached copies may not be written yet)."""
        if self._index_size is not None:
            return self._index_size
        return os.stat(os.path.join(self.local_dir, get_index_basename())).st_size

    def release_index(self) -> None:
        """Forget the index text kept for the node's set-up (another process of the node did it)."""
        self._pending_index = self._pending_table = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if not getattr(self._store, "travels_with_streams", False):
            state["_store"] = None  # opened again there (stores rebuild their clients anyway)
        state["_pending_index"] = None  # the node's set-up is done before workers exist
        state["_pending_table"] = None
        return state


def index_bytes(streams: Sequence[Stream]) -> int:
    """Bytes of every stream's index files in the cache: what a cache limit always counts."""
    return sum(stream.get_index_size() for stream in streams)


def _file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # not written (a read-only directory): nothing on disk
        return 0


streams_registry: TypedRegistry[type[Stream]] = create_registry(
    "streaming", "streams_registry", generic_type=type[Stream], entry_points=True,
    description="The streams registry is used for registering Stream classes.",
)
streams_registry.register("stream", func=Stream)
