"""Small MDS datasets whose every sample can be checked, published to any test server.

A sample is ``{"id": i, "tokens": tokens_for(i)}``; `check_sample` recomputes the tokens, so a
corrupt or misplaced sample is caught, not only a missing one. `publish` writes the dataset
straight to a writable server with `MDSWriter(out=url)`, or writes it locally and seeds the files
around the store for read-only servers (HTTP).
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np

from streaming import MDSWriter
from streaming.storage import open_store
from tests.storage.servers import Server

COLUMNS = {"id": "int", "tokens": "ndarray:uint16:64"}


def tokens_for(i: int) -> np.ndarray:
    return ((np.arange(64, dtype=np.uint64) * 2654435761 + i * 40503) % 65521).astype(np.uint16)


def check_sample(sample: dict[str, Any]) -> int:
    """The sample's id, after checking its tokens are the ones written for that id."""
    i = int(sample["id"])
    np.testing.assert_array_equal(sample["tokens"], tokens_for(i), err_msg=f"sample {i}")
    return i


def write_local(out: Any, n: int, *, compression: str | None = "zstd",
                size_limit: int = 6_000, hashes: tuple[str, ...] = ("xxh64",)) -> None:
    """`n` samples into `out` (a directory, URL or (local, remote) pair): ~40 per shard."""
    with MDSWriter(out=out, columns=COLUMNS, compression=compression, hashes=list(hashes),
                   size_limit=size_limit) as writer:
        for i in range(n):
            writer.write({"id": i, "tokens": tokens_for(i)})


def publish(server: Server, n: int, **kwargs: Any) -> str:
    """Write a fresh dataset of `n` samples below `server`; returns its URL."""
    url = server.fresh_url()
    if open_store(url, **server.options).supports_writes:
        write_local(url, n, **kwargs)
        return url
    with tempfile.TemporaryDirectory() as tmp:
        write_local(tmp, n, **kwargs)
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), "rb") as f:
                server.seed(f"{url}/{name}", f.read())
    return url


def index_of(url: str, **options: Any) -> dict[str, Any]:
    return json.loads(open_store(url, **options).get("index.json"))


def fetched_bytes_per_shard(index: dict[str, Any]) -> np.ndarray:
    """What a cold cache downloads for each shard: the zip file if there is one, else the raw."""
    return np.array([(shard.get("zip_data") or shard["raw_data"])["bytes"]
                     for shard in index["shards"]], np.int64)


def shard_of_sample(index: dict[str, Any], sample_ids: np.ndarray) -> np.ndarray:
    """The shard each global sample id lives in."""
    ends = np.cumsum([shard["samples"] for shard in index["shards"]])
    return np.searchsorted(ends, np.asarray(sample_ids, np.int64), side="right")
