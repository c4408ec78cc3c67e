"""`StreamingDataset`: the reference's arguments and behaviour, composed from our rooms.

The constructor reads like a table of contents: check the arguments, build the streams, load
their indexes, derive weights, open the node's shared namespace. Iteration asks `order/` for the
epoch plan (computed once per node and shared), `cache/` for shards and the readers for samples.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from typing import Any, Iterator, Sequence

import numpy as np
from torch.utils.data import IterableDataset

from streaming.array import Array
from streaming.cache.node_cache import NodeCache
from streaming.catalog import Catalog
from streaming.checkpoint import (
    RESUME_BYTES,
    Checkpoint,
    check_state_dict,
    decode_checkpoint,
    encode_checkpoint,
)
from streaming.config import DEFAULT_TIMEOUT, DatasetConfig
from streaming.coord import open_namespace
from streaming.coord.barrier import LATCH_SLOTS, Latch, once_per_node
from streaming.iteration import EpochReads, drop_padding, iterate_epoch
from streaming.order.defaults import resolve_num_canonical_nodes, resolve_shuffle_block_size
from streaming.order.partition import resume_limit
from streaming.order.world import World
from streaming.registry import construct_from_registry
from streaming.stream import Stream, streams_registry

__all__ = ["StreamingDataset"]

log = logging.getLogger(__name__)


class StreamingDataset(Array, IterableDataset):
    """A dataset streamed from one or more remote (or local) shard directories.

    Arguments, defaults and behaviour are MosaicML Streaming's; see the README and
    `docs/compatibility.md` for what we changed on purpose. All arguments are keyword-only.
    """

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
    ) -> None:
        config = DatasetConfig(
            remote=remote, local=local, split=split, download_retry=download_retry,
            download_timeout=download_timeout, validate_hash=validate_hash, keep_zip=keep_zip,
            epoch_size=epoch_size, predownload=predownload, cache_limit=cache_limit,
            sampling_method=sampling_method, sampling_granularity=sampling_granularity,
            partition_algo=partition_algo, num_canonical_nodes=num_canonical_nodes,
            batch_size=batch_size, shuffle=shuffle, shuffle_algo=shuffle_algo,
            shuffle_seed=shuffle_seed, shuffle_block_size=shuffle_block_size,
            batching_method=batching_method, allow_unsafe_types=allow_unsafe_types,
            replication=replication, stream_name=stream_name, stream_config=stream_config,
        )
        self._set_worlds(replication)
        config.validate(has_streams=bool(streams))
        self.config = config
        self._copy_public_arguments(config)
        self.streams = self._build_streams(streams, config)
        self.num_streams = len(self.streams)
        Stream.validate_weights(self.streams)
        self._load_streams()
        self.cache_limit = self._check_cache_limit(config.resolved_cache_limit)
        self.epoch_size = Stream.apply_weights(self.streams, self.samples_per_stream,
                                               config.resolved_epoch_size, shuffle_seed)
        self.length = math.ceil(self.epoch_size / self._parallel_world.num_ranks)
        self._open_node_state()

    # ------------------------------------------------------------------------- construction

    def _set_worlds(self, replication: int | None) -> None:
        self._unique_world = World.detect()
        self._parallel_world = (self._unique_world.replicate(replication) if replication
                                else self._unique_world.copy())
        self.initial_physical_nodes: int | None = None

    def _copy_public_arguments(self, config: DatasetConfig) -> None:
        for name in ("predownload", "sampling_method", "sampling_granularity", "partition_algo",
                     "num_canonical_nodes", "batch_size", "shuffle", "shuffle_algo",
                     "shuffle_seed", "shuffle_block_size", "batching_method",
                     "allow_unsafe_types", "replication"):
            setattr(self, name, getattr(config, name))
        self.predownload = config.resolved_predownload
        self.epoch_seed_change = config.epoch_seed_change

    @staticmethod
    def _build_streams(streams: Sequence[Stream] | None, config: DatasetConfig) -> list[Stream]:
        defaults = config.stream_defaults()
        if streams:
            for stream in streams:
                stream.apply_default(defaults)
            return list(streams)
        kwargs = dict(config.stream_config or {})
        kwargs.update(defaults)
        return [construct_from_registry(config.stream_name, streams_registry,
                                        partial_function=False, kwargs=kwargs)]

    def _load_streams(self) -> None:
        groups = []
        for stream in self.streams:
            shards = stream.get_shards(self._unique_world, self.allow_unsafe_types)
            if not sum(shard.samples for shard in shards):
                raise RuntimeError(
                    f"Stream contains no samples: {os.path.join(stream.local_dir, 'index.json')}."
                )
            groups.append(shards)
        catalog = Catalog.build(groups)
        self._catalog = catalog
        self.shards = catalog.shards
        self.num_shards = len(catalog.shards)
        for name in ("stream_per_shard", "shards_per_stream", "shard_offset_per_stream",
                     "samples_per_shard", "sample_offset_per_shard", "samples_per_stream",
                     "sample_offset_per_stream", "spanner"):
            setattr(self, name, getattr(catalog, name))
        self.num_samples = catalog.num_samples

    def adopt_batch_size(self, batch_size: int) -> None:
        """Lay samples out for `batch_size` when the dataset was built without one.

        `StreamingDataLoader` calls this with its own batch size; a dataset given one keeps it.
        `predownload`, when left to its default, follows (8 batches).
        """
        if self.batch_size is not None:
            return
        self.batch_size = batch_size
        if self.config.predownload is None:
            self.predownload = 8 * batch_size

    def _check_cache_limit(self, limit: int | None) -> int | None:
        if limit is None:
            return None
        index_bytes = sum(stream.get_index_size() for stream in self.streams)
        if limit <= index_bytes:
            raise ValueError(
                f"Minimum cache usage ({index_bytes} bytes) is larger than the cache limit "
                f"({limit} bytes). Please raise `cache_limit`. Recommendation is to provide a "
                "`cache_limit` as high as possible to avoid thrashing."
            )
        largest = max(shard.get_max_size() for shard in self.shards)
        if limit < 4 * largest:
            raise ValueError(
                f"Cache limit ({limit} bytes) is too low. Increase the `cache_limit` to at-least "
                f"four times the largest shard size ({largest} bytes) which includes raw "
                "(decompressed) and zip (compressed) file size. Recommendation is to provide a "
                "`cache_limit` as high as possible to avoid thrashing."
            )
        return limit

    def _open_node_state(self) -> None:
        """Attach the node-shared objects; the node's first process sets the cache up.

        Whichever process creates the shard table (any rank may win that race) caches each
        stream's index, reconciles the cache directory and records what it holds; it needs
        nothing another process writes. The others wait until it is done (at once if it fails or
        dies), so none touches shard states before they are set. Each process then joins the
        epoch barrier as a member, so a rank that dies makes its peers' barrier fail fast.
        """
        locals_ = [os.path.abspath(s.local_dir) for s in self.streams]
        remotes = [s.remote_dir for s in self.streams]
        ns = open_namespace(locals_, remotes)
        self._namespace = ns
        self._cache = NodeCache(ns, self.shards, [s.source for s in self.streams],
                                self.stream_per_shard, self.cache_limit)
        first = self._cache.claims.states.created
        once_per_node(Latch(ns.array("setup", np.int64, LATCH_SLOTS)), first, self._set_up_cache,
                      f"The cache set-up of {locals_}")
        for stream in self.streams:
            stream.release_index()
        self._next_epoch = ns.scalar("next_epoch")
        self._resume_page = ns.array("resume", np.uint8, RESUME_BYTES)
        self._epoch_barrier = ns.barrier("epoch")
        self._epoch_barrier.join()
        self._plan_board = ns.board("plan")

    def _set_up_cache(self) -> None:
        """Cache the indexes and record the bytes of each shard already present (once per node)."""
        present = np.zeros(self.num_shards, np.int64)
        for stream_id, stream in enumerate(self.streams):
            begin = int(self.shard_offset_per_stream[stream_id])
            end = begin + int(self.shards_per_stream[stream_id])
            stream.set_up_local(self.shards[begin:end], present[begin:end])
        self._cache.set_up(sum(s.get_index_size() for s in self.streams), present)

    # ------------------------------------------------------------------------- sizes

    @property
    def size(self) -> int:
        """Unique underlying samples (all streams)."""
        return self.num_samples

    def __len__(self) -> int:
        """Samples this device sees per epoch."""
        return self.length

    @property
    def next_epoch(self) -> int:
        return int(self._next_epoch.get())

    @next_epoch.setter
    def next_epoch(self, value: int) -> None:
        self._next_epoch.set(value)

    @property
    def cache_usage(self) -> int:
        return int(self._cache.usage.get())

    @cache_usage.setter
    def cache_usage(self, value: int) -> None:
        self._cache.usage.set(value)

    @property
    def egress(self) -> dict[str, Any]:
        """Bytes and seconds this node spent downloading shards (network egress)."""
        return self._cache.egress()

    # ------------------------------------------------------------------------- random access

    def prepare_shard(self, shard_id: int, blocking: bool = True) -> None:
        """Make a shard local (fetching it once per node); see `NodeCache.prepare`."""
        self._cache.prepare(shard_id, blocking=blocking)

    def evict_shard(self, shard_id: int) -> None:
        self._cache.evict(shard_id)

    def evict_coldest_shard(self) -> None:
        self._cache.evict_coldest()

    def _read(self, shard_id: int, index: int, retry: int = 7) -> Any:
        cause = ""  # the message only: a kept exception would tie this frame into a cycle
        for attempt in range(1 + retry):
            try:
                sample = self.shards[shard_id].get_item(index)
                self._cache.touch(shard_id)
                return sample
            except FileNotFoundError as err:
                cause = str(err)
            self.shards[shard_id].close()
            self._cache.prepare(shard_id, blocking=True, force=attempt > 0)
        hint = ("This may be due to thrashing caused by `cache_limit` being set too low."
                if self.cache_limit else "Check if the shard file exists in your remote location "
                "or have you deleted the shard file from the local directory?")
        raise RuntimeError(f"{cause}. StreamingDataset repeatedly failed to download a shard. "
                           f"{hint}")

    def get_item(self, sample_id: int, retry: int = 7) -> Any:
        """One sample by global id, fetching its shard if needed."""
        shard_id, index = self.spanner[sample_id]
        return self._read(shard_id, index, retry)

    # ------------------------------------------------------------------------- checkpoints

    def _stored_checkpoint(self) -> Checkpoint | None:
        return decode_checkpoint(self._resume_page.numpy())

    def _resolve_defaults(self, num_physical_nodes: int) -> None:
        self.num_canonical_nodes = resolve_num_canonical_nodes(
            self.num_canonical_nodes, self.shuffle_algo, num_physical_nodes)
        self.shuffle_block_size = resolve_shuffle_block_size(self.shuffle_block_size,
                                                             self.num_canonical_nodes)

    def _resume(self, world: World, epoch: int) -> tuple[int, int]:
        """(epoch, samples to skip) for an epoch presumed to be `epoch`."""
        checkpoint = self._stored_checkpoint()
        if checkpoint is None or checkpoint.epoch < epoch:
            self._resolve_defaults(world.num_nodes)
            return epoch, 0
        self.num_canonical_nodes = checkpoint.num_canonical_nodes
        self.shuffle_seed = checkpoint.shuffle_seed
        self.initial_physical_nodes = checkpoint.initial_physical_nodes
        self._resolve_defaults(world.num_nodes)
        return checkpoint.epoch, checkpoint.sample_in_epoch

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
        check_state_dict(obj, resume_limit(self.epoch_size, self._parallel_world.num_ranks))
        self._resume_page.numpy()[:] = page

    # ------------------------------------------------------------------------- iteration

    def resample_streams(self, epoch: int, stream_id: int | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
        """(shuffle units, sample ids) of an epoch after per-stream resampling."""
        from streaming.order.config import PlanConfig

        resampled = PlanConfig.from_dataset(self).resample(epoch, stream_id)
        return resampled.units, resampled.materialize()

    def _plan_epoch(self, world: World, epoch: int, sample_in_epoch: int) -> np.ndarray:
        if self.batch_size is None:
            warnings.warn(
                "StreamingDataset was built without `batch_size`, so it lays samples out for "
                "batches of 1 (the DataLoader's default). Pass `batch_size=` to StreamingDataset "
                "(the same as your DataLoader's), or use StreamingDataLoader, which hands its "
                "own to the dataset.", stacklevel=2)
            self.batch_size = 1
        if not isinstance(self.batch_size, int):
            raise ValueError(
                "Please pass `batch_size` to StreamingDataset. It should be set the same as the "
                "DataLoader, and is the number of samples per batch, for each device. It is "
                "necessary for deterministic resumption and optimal performance."
            )
        from streaming.order.batching import generate_work

        if self.replication:
            log.warning("With replication, count samples in state_dict as the loader does "
                        "(divided by the replication factor).")
        return generate_work(self.batching_method, self, world, epoch, sample_in_epoch)

    def _begin_epoch(self, unique: World, parallel: World) -> np.ndarray:
        """Agree on the epoch with the node's other workers and return this worker's ids."""
        epoch, offset = self._resume(parallel, self.next_epoch)
        generation = self._epoch_barrier.wait(unique.workers_per_node)
        if unique.is_local_leader:
            self.next_epoch = epoch + 1
            plan = self._plan_epoch(parallel, epoch, offset)
            self._plan_board.publish(plan if self.replication else plan[parallel.node])
        plan = self._plan_board.read(min_generation=generation)
        node_plan = plan[parallel.node] if self.replication else plan
        ids = node_plan[parallel.rank_of_node, parallel.worker_of_rank].reshape(-1)
        return drop_padding(ids)  # a view of the shared plan unless padding sits mid-list

    def __iter__(self) -> Iterator[Any]:
        unique = self._unique_world.detect_workers()
        parallel = (unique.replicate(self.replication) if self.replication
                    else unique.copy())
        sample_ids = self._begin_epoch(unique, parallel)
        custom = type(self).get_item is not StreamingDataset.get_item
        reads = EpochReads(self.shards, self._cache, self.spanner.locate_many,
                           unique.worker_of_node, self._read, self.get_item if custom else None)
        yield from iterate_epoch(sample_ids, reads, self.predownload)

    # ------------------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Release shared memory and open shard mappings now (also done on garbage collection)."""
        try:
            for shard in self.shards:
                shard.close()
        finally:  # even if a signal handler raises into us (torch's, on a killed worker)
            self._namespace.close()

    def __enter__(self) -> StreamingDataset:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
