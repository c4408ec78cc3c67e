"""An in-order epoch under a cache limit fetches every shard once.

Found by comparing the simulator with real runs: with `num_workers=0` the epoch's prefetcher
fell behind the consumer and prepared shards the consumer had read past and the cache had
evicted since, fetching them again (2-12 refetches in an epoch of 94 shards). Its window ran
ahead of it; nothing told it to skip what lay behind.
"""

from __future__ import annotations

import pytest

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset


@pytest.mark.parametrize("through", ["dataset", "loader"])
def test_an_in_order_epoch_under_a_cache_limit_fetches_each_shard_once(tmp_path, through):
    remote = str(tmp_path / "remote")
    with MDSWriter(out=remote, columns={"id": "int", "x": "bytes"}, size_limit=6_000) as writer:
        for i in range(2_000):
            writer.write({"id": i, "x": bytes(200)})
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=8,
                               cache_limit=60_000, predownload=16)
    try:
        shards = len(dataset.shards)
        if through == "dataset":
            ids = [int(sample["id"]) for sample in dataset]
        else:
            loader = StreamingDataLoader(dataset, batch_size=8, num_workers=0)
            ids = [int(i) for batch in loader for i in batch["id"]]
        metrics = dataset.metrics()
    finally:
        dataset.close()
    assert ids == list(range(2_000))
    assert metrics["evictions"] > 0  # the limit bit
    assert (metrics["fetches"], metrics["refetches"]) == (shards, 0)
