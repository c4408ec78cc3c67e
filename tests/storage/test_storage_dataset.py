"""`StreamingDataset(remote=<url>)` end to end on every server: full epochs and random access.

The remote is reached exactly as a user's would be: the dataset opens it with no options, so the
server is configured through the environment variables each backend reads (`Server.env`).
Datasets are compressed (zstd) and checked with `validate_hash`; every sample's content is
verified, not only its id.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from streaming import StreamingDataLoader, StreamingDataset
from tests.storage.sample_data import (
    check_sample,
    fetched_bytes_per_shard,
    index_of,
    publish,
    shard_of_sample,
)
from tests.storage.servers import Server

N = 400  # ~10 shards of ~40 samples

SERVERS = ("local", "moto", "seaweed", "gcs", "azurite", "http", "https", "sftp")


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Server:
    return request.getfixturevalue(f"{request.param}_server").apply_env(monkeypatch)


@pytest.fixture
def remote(server: Server) -> str:
    return publish(server, N)


def _open(remote: str, local: Any, **kwargs: Any) -> StreamingDataset:
    kwargs.setdefault("batch_size", 8)
    return StreamingDataset(remote=remote, local=str(local), validate_hash="xxh64",
                            download_retry=2, download_timeout=60, **kwargs)


@pytest.mark.timeout(120)
def test_full_epoch_yields_every_sample_once_intact(server: Server, remote: str,
                                                    tmp_path: Any) -> None:
    with _open(remote, tmp_path / "cache", shuffle=True) as dataset:
        ids = [check_sample(sample) for sample in dataset]
        assert sorted(ids) == list(range(N))
        assert ids != sorted(ids)  # shuffled
        index = index_of(remote, **server.options)
        assert dataset.egress["bytes"] == int(fetched_bytes_per_shard(index).sum())
        # a second epoch is served from the cache: nothing more is fetched
        assert sorted(check_sample(sample) for sample in dataset) == list(range(N))
        assert dataset.egress["bytes"] == int(fetched_bytes_per_shard(index).sum())


@pytest.mark.timeout(120)
def test_random_access_fetches_only_the_shards_it_touches(server: Server, remote: str,
                                                          tmp_path: Any) -> None:
    picks = np.array([N - 1, 0, 217, 218, 5])
    with _open(remote, tmp_path / "cache") as dataset:
        for i in picks.tolist():
            assert check_sample(dataset[i]) == i
        index = index_of(remote, **server.options)
        touched = np.unique(shard_of_sample(index, picks))
        assert dataset.egress["bytes"] == int(fetched_bytes_per_shard(index)[touched].sum())


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("server", ["seaweed"], indirect=True)
def test_loader_workers_stream_from_a_real_s3_server(server: Server, remote: str,
                                                     tmp_path: Any) -> None:
    """Two forked DataLoader workers each rebuild the S3 client and share one cache."""
    dataset = _open(remote, tmp_path / "cache", shuffle=True, batch_size=16)
    loader = StreamingDataLoader(dataset, batch_size=16, num_workers=2)
    ids = [int(i) for batch in loader for i in batch["id"]]
    assert sorted(ids) == list(range(N))
    index = index_of(remote, **server.options)
    assert dataset.egress["bytes"] == int(fetched_bytes_per_shard(index).sum())
    dataset.close()
