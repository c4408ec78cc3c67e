"""Under a cache limit, shards evicted behind a reader do not stay mapped.

A deleted file's disk space is freed only once no process maps it. Mappings kept of evicted
shards would let the cache's real footprint grow past `cache_limit` (to the whole dataset, over
an epoch) while the files it lists stay under it.
"""

from __future__ import annotations

import os
import time

import pytest

from streaming import StreamingDataLoader, StreamingDataset
from tests.dataset.procs import children, deleted_mappings


@pytest.mark.parametrize("workers", [0, 2])
def test_evicted_shards_are_not_kept_mapped(make_ints, cache_dir, workers: int) -> None:
    """After each epoch. A process may still map what it read since it last looked (at most
    what the limit holds)."""
    remote = make_ints(range(8000), size_limit=2000)  # 54 shards of ~2 KB
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4, cache_limit="24kb",
                          shuffle=True) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=workers,
                                     persistent_workers=workers > 0)
        seen = []
        for _ in range(2):
            seen += [v for batch in loader for v in batch["v"].tolist()]
            pids = [os.getpid(), *children()]
            assert deleted_mappings(local, pids) <= 12 * max(workers, 1)  # 24 KB of shards
        assert sorted(seen) == sorted(list(range(8000)) * 2)
        loader.close()


@pytest.mark.parametrize("batched", [True, False])
def test_a_worker_waiting_to_hand_over_a_batch_lets_evicted_shards_go(
        make_ints, cache_dir, batched: bool) -> None:
    """While the training step runs, the workers have their batches ready and wait. A shard one
    worker evicted then stayed mapped in the other until it was given its next batch to make
    (23 of these ~2 KB shards against a 24 KB limit). A waiting worker now lets them go within
    a fraction of a second. Checked at several pauses of the consumer; `batched` is the
    loader's column path, else per-sample reads through `default_collate`."""
    remote = make_ints(range(8000), size_limit=2000)  # 54 shards of ~2 KB
    local = cache_dir()
    with StreamingDataset(remote=remote, local=local, batch_size=4, cache_limit="24kb",
                          shuffle=True) as ds:
        collate = None if batched else (lambda samples: {"v": [s["v"] for s in samples]})
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, collate_fn=collate)
        seen: list[int] = []
        for step, batch in enumerate(loader):
            seen += batch["v"].tolist() if batched else [int(v) for v in batch["v"]]
            if step % 100 == 50:  # the training step: the workers wait meanwhile
                deadline = time.monotonic() + 20
                while (held := deleted_mappings(local, children())) > 0:
                    assert time.monotonic() < deadline, f"{held} evicted shards still mapped"
                    time.sleep(0.01)
        assert sorted(seen) == list(range(8000))
        loader.close()
