"""`StreamingDataset`: the reference's arguments and behaviour, composed from our rooms.

The constructor reads like a table of contents: check the arguments, build the streams, load
their indexes, derive weights, open the node's shared namespace. Iteration asks `order/` for the
epoch plan (computed once per node and shared), `cache/` for shards and the readers for samples.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from torch.utils.data import IterableDataset, get_worker_info

from streaming.allocator import tune_for_batches
from streaming.array import Array, own_item_read
from streaming.cache.early_reads import early_reads_enabled
from streaming.checkpoint import (
    Checkpoint,
    check_state_dict,
    decode_checkpoint,
    encode_checkpoint,
)
from streaming.coord.job_agreement import check_same_everywhere
from streaming.dataset_cache import CacheControls
from streaming.dataset_config import DEFAULT_TIMEOUT, DatasetConfig
from streaming.dataset_doc import ARGUMENTS
from streaming.dataset_fields import (
    CatalogField,
    ConfigField,
    OrderField,
    ResolvedField,
)
from streaming.dataset_lifecycle import Lifecycle, as_loader_worker
from streaming.dataset_setup import (
    build_streams,
    check_limit,
    check_readers,
    derive_table,
    load_catalog,
    open_node_state,
    order_signature,
)
from streaming.dataset_views import SizeViews
from streaming.default_notices import notice_lazy_defaults, notice_predownload
from streaming.epoch_reads import EpochReads
from streaming.format.shard_readers import ShardReaders
from streaming.iteration import drop_padding, epoch_samples, iterate_batches, outlive_close
from streaming.latest_iteration import LatestIteration
from streaming.order.defaults import BATCHING_METHODS, user_batching
from streaming.order.plan import (
    Resolution,
    batch_size_when_missing,
    epoch_node_rows,
    node_rows,
    plan,
    plan_config,
    resolve_epoch,
)
from streaming.order.world import World
from streaming.prefetch import Prefetchers
from streaming.spanner import Spanner
from streaming.stream import Stream

__all__ = ["StreamingDataset"]

log = logging.getLogger(__name__)


def own_sample_read(dataset: StreamingDataset) -> Callable[[int], Any] | None:
    """A subclass's own read of one sample (`own_item_read`), or None for ours, which
    iteration reads in bulk instead."""
    return own_item_read(dataset, StreamingDataset)


class StreamingDataset(SizeViews, CacheControls, Lifecycle, Array, IterableDataset):
    """A dataset streamed from one or more remote (or local) shard directories.

    Arguments, defaults and behaviour are MosaicML Streaming's; see the README and
    `docs/compatibility.md` for what we changed on purpose. All arguments are keyword-only.
    Two are ours: `bytes_as_views=True` returns `bytes` columns as read-only views of the shard
    instead of copies (`Reader.bytes_as_views`; off by default), and `columns=[...]` reads (and
    fetches) only those columns of Parquet files indexed in place (`docs/parquet.md`; the
    dataset's one stream; with `streams`, `Stream(columns=...)`). The reference's attributes
    (`shuffle`, `batch_size`, `num_canonical_nodes`, `samples_per_shard`...) are typed views of
    `_ss_config`, the lazily resolved order values and the shard catalog
    (`streaming.dataset_fields`); a subclass may assign them before calling `__init__`, as with
    the reference. The dataset's own state is in attributes named `_ss_*`, so a subclass's
    `self.config`, `self._cache` or `self._table` never collides with it. `batches()` yields
    the epoch as batches of numpy columns.
    """

    __doc__ = (__doc__ or "") + ARGUMENTS  # every argument (`streaming.dataset_doc`)

    # The order knobs (`config.order`), checked again when set.
    shuffle = OrderField[bool]()
    shuffle_algo = OrderField[str]()
    partition_algo = OrderField[str]()
    sampling_method = OrderField[str]()
    sampling_granularity = OrderField[int]()
    batching_method = OrderField[str]()
    batch_size = OrderField["int | None"]()
    # Decided at the first epoch or state dict, or by a checkpoint (`streaming.order.Resolution`).
    num_canonical_nodes = ResolvedField["int | None"]()
    shuffle_seed = ResolvedField[int]()
    shuffle_block_size = ResolvedField["int | None"]()
    initial_physical_nodes = ResolvedField["int | None"]()
    # Runtime knobs.
    cache_limit = ConfigField["int | None"]()
    allow_unsafe_types = ConfigField[bool]()
    bytes_as_views = ConfigField[bool]()
    replication = ConfigField["int | None"]()
    # The shard catalog's bookkeeping (int64 arrays, stream then shard order).
    shards = CatalogField[ShardReaders]()
    num_shards = CatalogField[int]()
    num_samples = CatalogField[int]()
    stream_per_shard = CatalogField[NDArray[np.int64]]()
    shards_per_stream = CatalogField[NDArray[np.int64]]()
    shard_offset_per_stream = CatalogField[NDArray[np.int64]]()
    samples_per_shard = CatalogField[NDArray[np.int64]]()
    sample_offset_per_shard = CatalogField[NDArray[np.int64]]()
    samples_per_stream = CatalogField[NDArray[np.int64]]()
    sample_offset_per_stream = CatalogField[NDArray[np.int64]]()
    spanner = CatalogField[Spanner]()
    # Set by `StreamingDataLoader` on a worker's copy, or around creating its single-process
    # iterator: (batch_size, drop_last) makes `__iter__` yield column batches (`loader.py`).
    _loader_batches: tuple[int, bool] | None = None

    def __init__(
        self,
        *,
        streams: Sequence[Stream] | None = None,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        download_retry: int = 2,
        download_timeout: float = DEFAULT_TIMEOUT,
        validate_hash: str | None = None,
        keep_zip: bool = False,
        epoch_size: int | str | None = None,
        predownload: int | None = None,
        cache_limit: int | str | None = None,
        sampling_method: str = "balanced",
        sampling_granularity: int = 1,
        partition_algo: str = "relaxed",
        num_canonical_nodes: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = False,
        shuffle_algo: str = "py1e",
        shuffle_seed: int = 9176,
        shuffle_block_size: int | None = None,
        batching_method: str = "random",
        allow_unsafe_types: bool = False,
        replication: int | None = None,
        stream_name: str = "stream",
        stream_config: dict[str, Any] | None = None,
        bytes_as_views: bool = False,
        columns: Sequence[str] | None = None,
    ) -> None:
        arguments = {name: value for name, value in locals().items()
                     if name not in ("self", "streams")}
        self._set_worlds(replication)
        self._ss_config = DatasetConfig.from_arguments(arguments, has_streams=bool(streams))
        self._ss_resolution: Resolution = self._ss_config.order.start()
        if self._ss_config.predownload is None and not self._unique_world.worker_of_rank:
            notice_predownload()
        self.streams = build_streams(streams, self._ss_config)
        Stream.validate_weights(self.streams)
        loading = time.perf_counter()
        self._ss_catalog = load_catalog(self.streams, self._unique_world, self.allow_unsafe_types)
        loading = time.perf_counter() - loading
        if self._ss_config.bytes_as_views:
            self._ss_catalog.shards.set_bytes_as_views(True)
        check_limit(self._ss_config.cache_limit, self.streams, self._ss_catalog)
        self._ss_table = derive_table(self._ss_catalog, self.streams, self._ss_config)
        check_same_everywhere(order_signature(self._ss_config, self._ss_table, replication),
                              [f"{s.remote or s.local}#{s.split}" for s in self.streams])
        node = open_node_state(self.streams, self._ss_catalog, self.cache_limit, self._ss_config)
        self._ss_namespace, self._ss_cache = node.namespace, node.cache
        self._plan_board = node.plan_board
        self._next_epoch, self._resume_page = node.next_epoch, node.resume_page
        self._epoch_barrier = node.epoch_barrier
        self._prefetchers = Prefetchers()  # of this process's live iterations, for `close()`
        self._ss_latest = LatestIteration()  # a new iteration ends the one before
        self._register_own()
        self._ss_cache.count_as_main(self._unique_world.rank_of_node)
        self._ss_cache.counters.add_many({"index_load_seconds": loading,
                                       "index_loads": len(self.streams)})
        # This process will receive batches (any loader's, `batches()`) and drop each at once:
        # glibc must keep that memory for the next one, not fault it in again (`allocator`).
        tune_for_batches()

    # ------------------------------------------------------------------------- construction

    def _set_worlds(self, replication: int | None) -> None:
        self._unique_world = World.detect()
        self._parallel_world = (self._unique_world.replicate(replication)
                                if replication is not None else self._unique_world.copy())

    def adopt_batch_size(self, batch_size: int) -> None:
        """Lay samples out for `batch_size` when the dataset was built without one.

        `StreamingDataLoader` calls this with its own batch size; a dataset given one keeps it,
        but one that only took it from a `batches(n)` call (a quick look) takes the loader's.
        `predownload`, when left to its default, follows (8 batches).
        """
        if self.batch_size is None or self.__dict__.pop("_ss_batch_size_from_batches", False):
            self.batch_size = batch_size

    # ------------------------------------------------------------------------- random access

    def get_item(self, sample_id: int, retry: int = 7) -> Any:
        """One sample by global id, fetching its shard if needed."""
        shard_id, index = self.spanner[sample_id]
        return self._read(shard_id, index, retry)

    # ------------------------------------------------------------------------- checkpoints

    def _stored_checkpoint(self) -> Checkpoint | None:
        return decode_checkpoint(self._resume_page.numpy())

    def _resume(self, world: World, epoch: int) -> tuple[int, int]:
        """(epoch, samples to skip) for an epoch presumed to be `epoch`; decides the lazy values
        (kept, as the reference keeps its attributes) from the stored checkpoint if it applies."""
        before = self._ss_resolution
        self._ss_resolution, epoch, offset = resolve_epoch(
            before, self._stored_checkpoint(), epoch, world.num_nodes, self.shuffle_algo)
        if not world.worker_of_rank:
            notice_lazy_defaults(before, self._ss_resolution, self.shuffle_algo)
        return epoch, offset

    def state_dict(self, num_samples: int, from_beginning: bool) -> dict[str, Any]:
        """Checkpoint after `num_samples` samples consumed globally in the current epoch."""
        world = self._parallel_world
        epoch, offset = self._resume(world, self.next_epoch - 1)
        sample_in_epoch = num_samples if from_beginning else offset + num_samples
        initial = self.initial_physical_nodes or world.num_nodes
        return Checkpoint(epoch, sample_in_epoch, self.num_canonical_nodes, self.shuffle_seed,
                          initial).to_json()

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Resume from `obj` at the next iteration (call on every rank before iterating).

        Raises:
            ValueError: `obj` is not a checkpoint this dataset can resume from (see
                `check_state_dict`), or too large to share.
        """
        page = encode_checkpoint(obj)  # the reference's size error comes first
        world = self._parallel_world
        check_state_dict(obj, self.epoch_size, world.num_ranks, world.num_nodes,
                         self.batching_method)
        self._resume_page.numpy()[:] = page

    # ------------------------------------------------------------------------- iteration

    def resample_streams(self, epoch: int, stream_id: int | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
        """(shuffle units, sample ids) of an epoch after per-stream resampling."""
        resolution, _, _ = resolve_epoch(self._ss_resolution, None, epoch,
                                         self._parallel_world.num_nodes, self.shuffle_algo)
        resampled = plan_config(self._ss_config.order, self._ss_table, resolution).resample(
            epoch, stream_id)
        return resampled.units, resampled.materialize()

    def _plan_epoch(self, world: World, epoch: int, sample_in_epoch: int) -> np.ndarray:
        if self.batch_size is None:
            self.batch_size = batch_size_when_missing(self.batching_method)
        if self.replication is not None and self.replication > 1:  # 1 replicates nothing
            log.warning("With replication, count samples in state_dict as the loader does "
                        "(divided by the replication factor).")
        custom = user_batching(self.batching_method)
        if custom is not None:  # the user's own, in the reference's table: called as it calls it
            return np.asarray(custom(self, world, epoch, sample_in_epoch), np.int64)
        if self.batching_method not in BATCHING_METHODS:  # known where the dataset was built
            raise ValueError(
                f"Batching method {self.batching_method!r} is not in "
                "streaming.base.batching.batching_methods in this process: register a method "
                "of your own at module level (not under `if __name__ == '__main__':`), so "
                "DataLoader workers started with spawn or forkserver have it too.")
        return plan(self._ss_config.order, self._ss_table, self._ss_resolution, world, epoch,
                    sample_in_epoch)

    def _begin_epoch(self, unique: World, parallel: World) -> np.ndarray:
        """Agree on the epoch with the node's other workers and return this worker's ids."""
        epoch, offset = self._resume(parallel, self.next_epoch)
        failed: Exception | None = None
        if unique.is_local_leader:
            # Planned while the node's other workers are still arriving (a worker forked last
            # arrives milliseconds later): planning writes nothing shared, so it needs no turn.
            start = time.perf_counter()
            try:
                plan = self._plan_epoch(parallel, epoch, offset)
            except Exception as err:  # a bad setting: every worker of the node must hear it
                failed = err
            self._ss_cache.counters.add_many({"plans": 1,
                                              "plan_seconds": time.perf_counter() - start})
        generation = self._epoch_barrier.wait(unique.workers_per_node)
        if failed is not None:  # the others would wait for a plan until their deadline
            self._plan_board.publish_failure(f"{type(failed).__name__}: {failed}")
            raise failed
        if unique.is_local_leader:  # every worker has read `next_epoch` by now
            self.next_epoch = epoch + 1
            self._plan_board.publish(plan if self.replication else plan[parallel.node])
        plan = self._plan_board.read(min_generation=generation)
        node_plan = plan[parallel.node] if self.replication else plan
        if self.cache_limit is not None:  # eviction then knows which shard is needed when
            # The next epoch's order for the same world, worked out only if the cache needs it
            # near this epoch's end; a partial over plain data (no cycle back to the dataset).
            following = functools.partial(epoch_node_rows, self._ss_config.order, self._ss_table,
                                          self._ss_resolution, parallel, epoch + 1)
            self._ss_cache.set_epoch_order(node_rows(node_plan), self.spanner.locate_many,
                                        following)
        ids = node_plan[parallel.rank_of_node, parallel.worker_of_rank].reshape(-1)
        return drop_padding(ids)  # a view of the shared plan unless padding sits mid-list

    def _epoch_reads(self) -> tuple[np.ndarray, EpochReads]:
        """Begin an epoch in this worker: its sample ids and how it reads them."""
        self._ensure_open()
        unique = self._unique_world.detect_workers()
        check_readers(self._ss_config.cache_limit, self.streams, self._ss_catalog,
                      unique.workers_per_node)
        if get_worker_info() is not None:  # a DataLoader worker
            as_loader_worker(self._ss_config.bytes_as_views)
        self._ss_cache.count_as_worker(unique.worker_of_node)
        parallel = unique.replicate(self.replication) if self.replication else unique.copy()
        sample_ids = self._begin_epoch(unique, parallel)
        reads = EpochReads(self.shards, self._ss_cache, self.spanner.locate_many,
                           unique.worker_of_node, self._recover, own_sample_read(self),
                           early_limit=(self.batch_size or 1) if early_reads_enabled() else 0,
                           background=self._prefetchers)
        return sample_ids, reads

    def __iter__(self) -> Iterator[Any]:
        # Not a generator itself: the batching choice is made when the iterator is created
        # (a `StreamingDataLoader` sets it around that moment, see `loader.py`).
        batching = self._loader_batches
        if batching is not None:  # (not `self.batches`: a subclass may own that name)
            return self._ss_batches(*batching)
        # Begins at the first `next`, ending the iteration before (`LatestIteration`).
        return self._ss_latest.track(
            self._epoch_reads,
            lambda begin: epoch_samples(begin, self.predownload, self._ss_ended_why))

    def batches(self, batch_size: int | None = None, drop_last: bool = False
                ) -> Iterator[dict[str, Any]]:
        """This worker's samples of an epoch as batches of columns (no torch needed).

        The same samples, order and resumption state as iterating the dataset. Fixed-size
        numeric columns come as one numpy array each, gathered straight from the shard's bytes;
        others as arrays where `default_collate` would make a tensor, else as lists
        (`streaming.batch_columns`; `docs/runtime.md`). `batch_size` defaults to the dataset's;
        `drop_last` drops this worker's short last batch. A dataset built without a batch size
        adopts the one given, as `StreamingDataLoader` makes it do (`adopt_batch_size`), and
        lays its epochs out for it.

        Raises:
            ValueError: no batch size, or one below 1.
        """
        return self._ss_batches(batch_size, drop_last)

    def _ss_batches(self, batch_size: int | None, drop_last: bool) -> Iterator[dict[str, Any]]:
        size = self.batch_size if batch_size is None else batch_size
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"`batch_size` must be a positive int, got {size!r}.")
        if self.batch_size is None:  # laid out for it, until a loader brings its own
            self.batch_size = size
            self._ss_batch_size_from_batches = True
        return self._ss_latest.track(self._epoch_reads, lambda begin: _epoch_batches(
            begin, self.predownload, size, drop_last, self._ss_ended_why))


def _epoch_batches(begin: Callable[[], tuple[np.ndarray, EpochReads]], predownload: int,
                   batch_size: int, drop_last: bool, ended_why: Callable[[], str | None]
                   ) -> Iterator[dict[str, Any]]:
    """`iterate_batches`, its sample ids and reads made by `begin` at the first `next`; closed
    as its dataset gives way, it says so when resumed (as `epoch_samples`)."""
    sample_ids, reads = begin()
    try:
        yield from iterate_batches(sample_ids, reads, predownload, batch_size, drop_last)
    except GeneratorExit:  # `iterate_batches` has released what it held already
        why = ended_why()
        if why is None:
            raise
        yield from outlive_close(why)
