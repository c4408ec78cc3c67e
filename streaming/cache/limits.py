"""Whether a `cache_limit` can work for a dataset: checked at construction, and against the
node's readers when an epoch starts (their number is known only then).

Pure arithmetic over the index's numbers (no files, no shared state). The first two checks and
their messages are the reference's; the third is ours: shards whose only copy is local are never
evicted (the reference deletes them and the data is lost), so the limit must hold all of them
and still make room for the largest shard it fetches.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_cache_limit", "check_readers_fit", "required_bytes"]


def check_cache_limit(limit: int, index_bytes: int, shard_bytes: np.ndarray,
                      fetchable: np.ndarray) -> None:
    """Raise `ValueError` when `limit` cannot serve the dataset.

    Args:
        limit: the cache limit in bytes.
        index_bytes: the bytes of every stream's index.json (always counted).
        shard_bytes: per shard, the most it occupies (raw + zip).
        fetchable: per shard, whether it can be fetched again after eviction.
    """
    if limit <= index_bytes:
        raise ValueError(
            f"Minimum cache usage ({index_bytes} bytes) is larger than the cache limit "
            f"({limit} bytes). Please raise `cache_limit`. Recommendation is to provide a "
            "`cache_limit` as high as possible to avoid thrashing."
        )
    largest = int(shard_bytes.max()) if len(shard_bytes) else 0
    if limit < 4 * largest:
        raise ValueError(
            f"Cache limit ({limit} bytes) is too low. Increase the `cache_limit` to at-least "
            f"four times the largest shard size ({largest} bytes) which includes raw "
            "(decompressed) and zip (compressed) file size. Recommendation is to provide a "
            "`cache_limit` as high as possible to avoid thrashing."
        )
    if limit < index_bytes + largest:  # (the reference fails at the first sample instead)
        raise ValueError(
            f"Cache limit ({limit} bytes) cannot hold the index.json files ({index_bytes} "
            f"bytes) and the largest shard ({largest} bytes, raw and zip) together: nothing "
            f"could be read. Raise `cache_limit` by at least {index_bytes + largest - limit} "
            "bytes; as high as possible avoids thrashing.")
    pinned = int(shard_bytes[~fetchable].sum())
    fetch = int(shard_bytes[fetchable].max()) if fetchable.any() else 0
    if pinned and limit < required_bytes(index_bytes, shard_bytes, ~fetchable):
        more = f", and the largest shard to fetch needs {fetch} bytes more" if fetch else ""
        raise ValueError(
            f"Cache limit ({limit} bytes) cannot be met: {int((~fetchable).sum())} shards "
            f"({pinned} bytes) exist only in their local directory (their stream has no "
            f"remote), so they are never evicted{more}. Raise `cache_limit` by at least "
            f"{index_bytes + pinned + fetch - limit} bytes.")


def required_bytes(index_bytes: int, shard_bytes: np.ndarray, kept: np.ndarray) -> int:
    """The least a cache limit must hold when the shards `kept` (bool per shard: pinned, or
    their only copy is local) are never evicted: the indexes, those shards, and room to fetch
    the largest of the others."""
    others = shard_bytes[~kept]
    return index_bytes + int(shard_bytes[kept].sum()) + (int(others.max()) if len(others) else 0)


def check_readers_fit(limit: int, index_bytes: int, raw_bytes: np.ndarray,
                      max_bytes: np.ndarray, readers: int) -> None:
    """Raise `ValueError` when the node's `readers` cannot each keep a shard in the cache.

    Every reader (a rank's DataLoader worker, or the rank itself) keeps the shard it reads,
    and a worker whose batches wait for the training loop keeps it while it waits. With room
    for fewer shards than readers, a reader the loop needs next can wait for room that only
    readers blocked on the loop could free: a hang (as in the reference), or a `CacheFullError`
    only once the wait gives up.

    Args:
        limit: the cache limit in bytes.
        index_bytes: the bytes of every stream's index.json.
        raw_bytes: per shard, its raw (decompressed) size: what a shard being read occupies.
        max_bytes: per shard, raw + zip: what a shard being fetched reserves.
        readers: the node's readers (ranks per node x workers per rank, or ranks).
    """
    if readers <= 1 or not len(raw_bytes):
        return
    largest_raw, largest = int(raw_bytes.max()), int(max_bytes.max())
    # No more shards are ever held than there are, and a cache holding them all never evicts.
    held = min(readers, len(raw_bytes))
    need = min(index_bytes + (held - 1) * largest_raw + largest,
               index_bytes + int(max_bytes.sum()))
    if limit < need:
        raise ValueError(
            f"Cache limit ({limit} bytes) cannot keep a shard for each of this node's {readers} "
            f"readers (ranks x DataLoader workers): each keeps the shard it reads in the cache, "
            f"which takes {need} bytes with the index.json files (shards of up to {largest_raw} "
            f"bytes, {largest} while fetched). With less, the readers would wait on each other "
            f"for ever. Raise `cache_limit` to at least {need} bytes or use fewer workers.")
