"""Fixtures for the dataset runtime: small MDS datasets written with our writer."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pytest

from streaming import MDSWriter


def write_ints(out: str, values: range | list[int], size_limit: int | None = 226,
               compression: str | None = None, hashes: list[str] | None = None) -> str:
    """A dataset of samples {'v': value} (column v:int); size_limit 226 gives 5 per shard."""
    with MDSWriter(out=out, columns={"v": "int"}, size_limit=size_limit,
                   compression=compression, hashes=hashes) as writer:
        for value in values:
            writer.write({"v": value})
    return out


@pytest.fixture
def ints30(tmp_path) -> str:
    """30 samples valued 0..29 in 6 shards of 5 (the spec's end-to-end example)."""
    return write_ints(str(tmp_path / "remote"), range(30))


@pytest.fixture
def make_ints(tmp_path) -> Callable[..., str]:
    counter = iter(range(1000))

    def make(values, **kwargs) -> str:
        return write_ints(str(tmp_path / f"remote{next(counter)}"), values, **kwargs)

    return make


@pytest.fixture
def cache_dir(tmp_path) -> Callable[[], str]:
    counter = iter(range(1000))
    return lambda: str(tmp_path / f"cache{next(counter)}")


@pytest.fixture
def tokens_dataset(tmp_path) -> str:
    out = str(tmp_path / "tokens")
    rng = np.random.default_rng(0)
    with MDSWriter(out=out, columns={"tokens": "ndarray:uint16:64", "id": "int"},
                   compression="zstd", hashes=["xxh64"], size_limit=20_000) as writer:
        for i in range(2_000):
            writer.write({"tokens": rng.integers(0, 1000, 64, dtype=np.uint16), "id": i})
    assert len(os.listdir(out)) > 5
    return out
