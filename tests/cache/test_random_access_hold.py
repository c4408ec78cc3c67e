"""A shard fetched for random access is not evicted before it is read.

Found with 16 threads doing `dataset[i]` beside an iterating thread under a tight cache limit:
the shard a random access had just fetched was the best victim for the next fetch of any other
thread (the epoch's order did not need it soon), so it was evicted before it was opened, on
every retry, and the read failed with "repeatedly failed to download a shard" where the
reference read it. Here the other thread's fetches are made to land in exactly that instant.
"""

from __future__ import annotations

import streaming.cache.node_cache as node_cache
from streaming import MDSWriter, StreamingDataset


def test_a_shard_fetched_for_random_access_survives_fetches_before_its_read(tmp_path,
                                                                            monkeypatch):
    remote = str(tmp_path / "remote")
    with MDSWriter(out=remote, columns={"id": "int", "x": "bytes"}, size_limit=2_000) as writer:
        for i in range(200):
            writer.write({"id": i, "x": bytes(100)})
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4,
                               cache_limit=12_000)
    try:
        shards = len(dataset.shards)
        wanted = shards - 1
        first_of = dataset.spanner.locate_many
        prepare = node_cache.NodeCache.prepare

        def racing(self, shard, *args, **kwargs):
            result = prepare(self, shard, *args, **kwargs)
            if shard == wanted:  # another thread's fetches land before the read opens it
                self.access_times.numpy()[wanted] = 0  # the coldest: the first victim
                for other in range(shards - 1):
                    prepare(self, other, blocking=True)
            return result

        monkeypatch.setattr(node_cache.NodeCache, "prepare", racing)
        last = dataset.num_samples - 1
        assert int(first_of([last])[0][0]) == wanted
        assert int(dataset[last]["id"]) == last
        assert dataset.metrics()["evictions"] > 0  # the other fetches did evict
    finally:
        dataset.close()
