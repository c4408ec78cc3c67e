"""The `Args:` section of `StreamingDataset`'s docstring, kept apart so that `dataset.py` stays
the composition it is; `help(StreamingDataset)` shows it (appended to the class docstring)."""

from __future__ import annotations

__all__ = ["ARGUMENTS"]

ARGUMENTS = """
    Args:
        streams: several `Stream`s to mix (each with its own remote/local and its
            proportion/repeat/choose); give either `streams` or `remote`/`local`, not both.
        remote: where the shards live (s3://, gs://, azure://, oci://, hf://, https://, sftp://,
            dbfs:, a local path); None reads `local` alone.
        local: the local cache directory (one per node; every rank of a node passes the same).
            With no remote, the dataset directory itself. Default: a temporary directory named
            after the remote.
        split: a sub-directory of `remote` and `local` holding the index.
        download_retry: attempts in all for each file (default 2).
        download_timeout: seconds one download attempt may take (default 60).
        validate_hash: a digest of the index (e.g. 'xxh64', 'sha1') checked on each download.
        keep_zip: keep compressed shards in the cache beside their decompressed form.
        epoch_size: samples per epoch across streams (an int or '10k', '1.5M'); default: every
            stream's own size, weighted.
        predownload: samples each worker fetches ahead (default `8 * batch_size`; without a
            batch size, 64 until the first iteration, which takes `batch_size=1` and so 8).
        cache_limit: the cache's size bound in bytes or '10gb'; shards are evicted by next use.
        sampling_method: 'balanced' (default) or 'fixed': how a stream's choose/proportion
            picks its samples each epoch.
        sampling_granularity: samples taken from a shard at a time when sampling (default 1).
        partition_algo: 'relaxed' (default) or 'orig': how the epoch is cut across nodes,
            ranks and workers.
        num_canonical_nodes: the node count the sample order is defined for; the order depends
            on it and the seed, never on the real world size. Default: 64 per node for
            py1s/py2s, else the number of nodes of the first run (kept in checkpoints).
        batch_size: per-rank batch size of the loader; needed for exact partitioning and
            resumption (warned about when missing).
        shuffle: shuffle the samples (default False).
        shuffle_algo: 'py1e' (default), 'py1br', 'py1b', 'py1s', 'py2s' or 'naive'.
        shuffle_seed: the shuffle's seed (default 9176).
        shuffle_block_size: samples per shuffle block (py1b/py1br/py1e); default
            `max(4_000_000 // num_canonical_nodes, 1 << 18)`.
        batching_method: 'random' (default), 'stratified', 'per_stream' or
            'device_per_stream'.
        allow_unsafe_types: allow columns that run code when decoded (pickle); refused
            otherwise, at construction.
        replication: ranks that receive the same samples (tensor/sequence parallelism).
        stream_name: the registered `Stream` class built for `remote`/`local` (default
            'stream').
        stream_config: extra keyword arguments for that class.
        bytes_as_views: (ours) return `bytes` columns as read-only `memoryview`s instead of
            copies; each is valid while referenced (`docs/runtime.md`).
        columns: (ours) read and fetch only these columns of Parquet files indexed in place
            (`docs/parquet.md`).

    Raises:
        ValueError: a bad argument, with the reference's message (both `streams` and
            `remote`/`local`, an unknown algorithm, weights that do not add up...).
        UnsafeTypeError: a pickle column without `allow_unsafe_types` (also a `ValueError`).
        FileNotFoundError: no index at the remote (`ObjectNotFoundError`, naming the URL).
        RuntimeError: no `remote` and no index in `local` (the reference's type and message).
"""
