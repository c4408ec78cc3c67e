"""How a `StreamingDataset` is assembled: its streams, their shard catalog, the stream weights,
the cache-limit check and the node's shared state.

`StreamingDataset.__init__` calls these in order; each takes plain values and returns one, so
the constructor reads like a table of contents and no step reaches into the dataset.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from streaming.cache.limits import check_cache_limit, check_readers_fit
from streaming.cache.node_cache import NodeCache
from streaming.catalog import Catalog
from streaming.checkpoint import RESUME_BYTES
from streaming.coord import open_namespace
from streaming.coord.array import SharedArray
from streaming.coord.barrier import LATCH_SLOTS, Barrier, Latch, once_per_node
from streaming.coord.board import PlanBoard
from streaming.coord.namespace import Namespace
from streaming.coord.scalar import SharedScalar
from streaming.dataset_config import DatasetConfig
from streaming.dataset_lifecycle import close_idle_own
from streaming.defaults import epoch_wait_timeout
from streaming.order.plan import StreamTable
from streaming.order.world import World
from streaming.plugins import construct_from_registry
from streaming.stream import Stream, index_bytes, streams_registry

__all__ = ["NodeState", "build_streams", "check_limit", "derive_table", "load_catalog",
           "open_node_state", "order_signature"]


def build_streams(streams: Sequence[Stream] | None, config: DatasetConfig) -> list[Stream]:
    """The given streams with the dataset's defaults applied, or the one stream the dataset's
    own arguments describe (built through the streams registry, as the reference does)."""
    defaults = config.stream_defaults.as_dict()
    if streams:
        for stream in streams:
            stream.apply_default(defaults)
            warn_unused_overrides(stream)
        return list(streams)
    kwargs = dict(config.stream_config or {})
    kwargs.update(defaults)
    if config.columns is not None:  # only when given: a user's Stream class may not take it
        kwargs["columns"] = list(config.columns)
    stream = construct_from_registry(config.stream_name, streams_registry,
                                     partial_function=False, kwargs=kwargs)
    warn_unused_overrides(stream)
    return [stream]


_FETCH_HOOKS = ("prepare_shard",)  # (`_download_file` is called: `Stream._fetch_store`)


def warn_unused_overrides(stream: Stream) -> None:
    """Say so when a `Stream` subclass overrides a hook the reference fetched files through:
    here the node cache fetches the index and shards through the storage layer, so the override
    would be passed over in silence (and the files fetched from the remote by other means)."""
    kind = type(stream)
    overridden = [name for name in _FETCH_HOOKS
                  if getattr(kind, name, None) is not getattr(Stream, name)]
    if overridden:
        warnings.warn(
            f"{kind.__name__} overrides {', '.join(overridden)}, which shardstream does not "
            "call: the index and shards are fetched by the node cache through "
            "streaming.storage. To fetch from a store of your own, register it for a URL "
            "scheme with streaming.storage.register_store (docs/storage.md).", stacklevel=4)


def load_catalog(streams: Sequence[Stream], world: World, allow_unsafe_types: bool) -> Catalog:
    """Every stream's shards (reading each index), as one catalog.

    Raises:
        RuntimeError: a stream has no samples (the reference's message).
    """
    catalog = Catalog.build([stream.get_shards(world, allow_unsafe_types) for stream in streams])
    for stream, samples in zip(streams, catalog.samples_per_stream.tolist()):
        if not samples:
            raise RuntimeError(
                f"Stream contains no samples: {os.path.join(stream.local_dir, 'index.json')}.")
    return catalog


def derive_table(catalog: Catalog, streams: Sequence[Stream], config: DatasetConfig
                 ) -> StreamTable:
    """Every stream's proportion, repeat and choose, recorded on the streams as well (the
    reference's `Stream.apply_weights` does, and user code reads them there)."""
    table = StreamTable.derive(
        catalog.layout, [stream.given_weights for stream in streams], config.order.epoch_size,
        config.order.shuffle_seed)
    for stream, weights in zip(streams, table.weights):
        stream.derived_weights = weights
    return table


def order_signature(config: DatasetConfig, table: StreamTable,
                    replication: int | None) -> dict[str, Any]:
    """What decides a dataset's sample order, as JSON values: the order arguments that matter
    to it, the replication, each stream's derived weights and a digest of every shard's sample
    count. Ranks of a job must agree on it (`streaming.coord.job_agreement`)."""
    layout = table.layout
    counts = hashlib.sha1(np.ascontiguousarray(layout.samples_per_shard, np.int64).tobytes()
                          + np.ascontiguousarray(layout.shards_per_stream, np.int64).tobytes())
    order = dataclasses.asdict(config.order)
    # What cannot change the order is left out: sampling options where every stream is taken
    # whole (a whole number of times), a seed where nothing is drawn at random.
    chosen = [w[2] for w in table.weights]
    sampled = any(c is not None and int(c) % max(int(n), 1)
                  for c, n in zip(chosen, layout.samples_per_stream, strict=True))
    if not sampled:
        del order["sampling_method"], order["sampling_granularity"]
    if not order["shuffle"]:
        del order["shuffle_block_size"]
        if not sampled and order["batching_method"] == "random":
            del order["shuffle_seed"]
    return {**order, "replication": replication or 1,
            "stream weights (proportion, repeat, choose)": [
                [None if v is None else float(v) for v in w] for w in table.weights],
            "digest of the shards' sample counts": counts.hexdigest()[:16]}


def check_limit(limit: int | None, streams: Sequence[Stream], catalog: Catalog) -> None:
    """Refuse a `cache_limit` that cannot hold what the epoch needs (see `check_cache_limit`)."""
    if limit is not None:
        fetchable = np.array([s.has_remote_copy for s in streams], bool)
        check_cache_limit(limit, index_bytes(streams),
                          catalog.shards.max_bytes,
                          fetchable[catalog.stream_per_shard])


def check_readers(limit: int | None, streams: Sequence[Stream], catalog: Catalog,
                  readers: int) -> None:
    """Refuse a `cache_limit` the node's readers cannot share (see `check_readers_fit`)."""
    if limit is not None:
        check_readers_fit(limit, index_bytes(streams), catalog.shards.raw_bytes,
                          catalog.shards.max_bytes, readers)


@dataclass
class NodeState:
    """The node-shared objects of one dataset (one namespace per dataset per node)."""

    namespace: Namespace
    cache: NodeCache
    next_epoch: SharedScalar
    resume_page: SharedArray
    epoch_barrier: Barrier
    plan_board: PlanBoard


def open_node_state(streams: Sequence[Stream], catalog: Catalog, cache_limit: int | None,
                    config: DatasetConfig | None = None) -> NodeState:
    """Attach the node-shared objects; the node's first process sets the cache up.

    Whichever process creates the shard table (any rank may win that race) caches each
    stream's index, reconciles the cache directory and records what it holds; it needs
    nothing another process writes. The others wait until it is done (at once if it fails or
    dies), so none touches shard states before they are set. Each process then joins the
    epoch barrier as a member, so a rank that dies makes its peers' barrier fail fast.
    """
    locals_ = [os.path.abspath(s.local_dir) for s in streams]
    ns = open_namespace(locals_, [s.remote_dir for s in streams], close_own=None
                        if config is None else partial(close_idle_own, config=config,
                                                       streams=streams))
    with ns.batch():  # one registry write for every node-shared object (the cache's too)
        cache = NodeCache(ns, catalog.shards, [s.source for s in streams],
                          catalog.stream_per_shard, cache_limit)
        setup = Latch(ns.array("setup", np.int64, LATCH_SLOTS))
        next_epoch = ns.scalar("next_epoch")
        resume_page = ns.array("resume", np.uint8, RESUME_BYTES)
        barrier = ns.barrier("epoch", epoch_wait_timeout())
        plan = ns.board("plan")

    def set_up() -> None:  # once per node: cache the indexes, record the shards present
        present = np.zeros(len(catalog.shards), np.int64)
        for stream_id, stream in enumerate(streams):
            span = catalog.stream_slice(stream_id)
            stream.set_up_local(catalog.groups[stream_id], present[span])
        cache.set_up(index_bytes(streams), present)

    once_per_node(setup, cache.claims.states.created, set_up, f"The cache set-up of {locals_}")
    for stream in streams:
        stream.release_index()
    barrier.join()
    return NodeState(ns, cache, next_epoch, resume_page, barrier, plan)
