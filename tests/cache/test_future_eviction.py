"""Future-aware eviction: under a cache limit the node drops the shard needed furthest ahead in
the known order, fetches no more than least-recently-used eviction, stays near the offline
optimum, and never deletes a shard whose only copy is local."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from torch.utils.data import DataLoader

from streaming import MDSWriter, Stream, StreamingDataset
from streaming.cache.eviction import EVICTION_ENV
from streaming.order.next_use import offline_optimum_bytes

N = 2000


def write_padded(out: str, start: int = 0, n: int = N) -> str:
    """Samples {'v': i, 'pad': 200 bytes} in shards of ~16 KB (about 70 samples each)."""
    with MDSWriter(out=out, columns={"v": "int", "pad": "bytes"}, size_limit=16_000) as writer:
        for i in range(start, start + n):
            writer.write({"v": i, "pad": bytes(200)})
    return out


def shard_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
               if f.endswith(".mds"))


@pytest.fixture(scope="module")
def padded(tmp_path_factory) -> str:
    return write_padded(str(tmp_path_factory.mktemp("padded") / "remote"))


def two_epochs(remote: str, local: str, limit: int | None, policy: str,
               monkeypatch: pytest.MonkeyPatch, workers: int = 0) -> tuple[int, list[int]]:
    """Bytes fetched over two shuffled epochs, and the sample ids in order."""
    monkeypatch.setenv(EVICTION_ENV, policy)
    seen: list[int] = []
    with StreamingDataset(remote=remote, local=local, batch_size=4, shuffle=True,
                          shuffle_seed=7, cache_limit=limit) as dataset:
        for _ in range(2):
            if workers:
                epoch = [int(v) for batch in DataLoader(dataset, batch_size=4,
                                                        num_workers=workers)
                         for v in batch["v"]]
            else:
                epoch = [sample["v"] for sample in dataset]
            assert sorted(epoch) == list(range(N))  # every sample once, whatever was evicted
            seen += epoch
        return dataset.egress["bytes"], seen


def test_future_aware_fetches_less_than_lru_and_near_the_optimum(
        padded, tmp_path, monkeypatch) -> None:
    total = shard_bytes(padded)
    index = os.path.getsize(os.path.join(padded, "index.json"))
    limit = index + total // 2
    lru, order = two_epochs(padded, str(tmp_path / "lru"), limit, "lru", monkeypatch)
    future, order_again = two_epochs(padded, str(tmp_path / "future"), limit, "future",
                                     monkeypatch)
    assert order == order_again  # eviction never changes what is read
    with StreamingDataset(remote=padded, local=str(tmp_path / "plain"), batch_size=4) as ds:
        shards, _ = ds.spanner.locate_many(np.array(order))
        sizes = np.array([s.get_max_size() for s in ds.shards])
    optimum = offline_optimum_bytes(shards, sizes, total // 2)
    assert future < 0.6 * lru  # a fully shuffled order: recency says little about the future
    assert future <= 1.1 * optimum, (future, optimum, lru)


@pytest.mark.slow
def test_with_two_workers_future_aware_never_fetches_more(padded, tmp_path,
                                                          monkeypatch) -> None:
    limit = os.path.getsize(os.path.join(padded, "index.json")) + shard_bytes(padded) // 2
    lru, _ = two_epochs(padded, str(tmp_path / "lru"), limit, "lru", monkeypatch, workers=2)
    future, _ = two_epochs(padded, str(tmp_path / "future"), limit, "future", monkeypatch,
                           workers=2)
    assert future <= lru


def test_an_unknown_policy_is_refused(padded, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(EVICTION_ENV, "random")
    with pytest.raises(ValueError, match="STREAMING_EVICTION must be 'future' or 'lru'"):
        StreamingDataset(remote=padded, local=str(tmp_path / "c"), batch_size=4)


def test_a_limit_below_the_only_copies_fails_at_construction(tmp_path) -> None:
    local_only = write_padded(str(tmp_path / "only"))
    size = shard_bytes(local_only)
    with pytest.raises(ValueError, match=r"exist only in their local directory .* Raise "
                                         r"`cache_limit` by at least \d+ bytes"):
        StreamingDataset(local=local_only, batch_size=4, cache_limit=size // 2)
    assert shard_bytes(local_only) == size  # nothing was deleted


def test_only_copies_survive_eviction_in_a_mix(tmp_path, monkeypatch) -> None:
    """The reference's data loss (mosaicml/streaming#988): under a cache limit it evicts shards
    of a stream without a remote, and their data is gone. Ours evicts only fetchable shards."""
    local_only = write_padded(str(tmp_path / "only"), start=0, n=500)
    remote = write_padded(str(tmp_path / "remote"), start=500, n=1500)
    before = sorted(os.listdir(local_only))
    pinned = shard_bytes(local_only)
    index = sum(os.path.getsize(os.path.join(d, "index.json")) for d in (local_only, remote))
    limit = index + pinned + shard_bytes(remote) // 3
    streams = [Stream(local=local_only), Stream(remote=remote, local=str(tmp_path / "cache"))]
    with StreamingDataset(streams=streams, batch_size=4, shuffle=True,
                          cache_limit=limit) as dataset:
        for _ in range(2):
            assert sorted(s["v"] for s in dataset) == list(range(2000))
        assert dataset.egress["bytes"] > shard_bytes(remote)  # the remote's shards were evicted
    assert sorted(os.listdir(local_only)) == before
    assert shard_bytes(local_only) == pinned
    shutil.rmtree(str(tmp_path / "cache"))


def test_a_smaller_limit_on_a_warm_cache_shrinks_it_at_start(padded, tmp_path) -> None:
    local = str(tmp_path / "warm")
    with StreamingDataset(remote=padded, local=local, batch_size=4) as dataset:
        assert sorted(s["v"] for s in dataset) == list(range(N))
    full = shard_bytes(local)
    index = os.path.getsize(os.path.join(padded, "index.json"))
    limit = index + full // 3
    with StreamingDataset(remote=padded, local=local, batch_size=4,
                          cache_limit=limit) as dataset:
        assert dataset.cache_usage <= limit
        assert shard_bytes(local) <= full // 3
        assert sorted(s["v"] for s in dataset) == list(range(N))


def test_pinned_shards_stay_resident_through_shuffled_epochs(padded, tmp_path) -> None:
    index = os.path.getsize(os.path.join(padded, "index.json"))
    limit = index + shard_bytes(padded) * 2 // 5
    local = str(tmp_path / "pins")
    with StreamingDataset(remote=padded, local=local, batch_size=4, shuffle=True,
                          cache_limit=limit) as dataset:
        pins = [0, 3]
        dataset.pin_shards(pins)
        names = [dataset.shards[s].raw_data.basename for s in pins]
        inodes = [os.stat(os.path.join(local, n)).st_ino for n in names]
        for _ in range(2):
            assert sorted(s["v"] for s in dataset) == list(range(N))
            # the same files all along: never evicted and fetched again
            assert [os.stat(os.path.join(local, n)).st_ino for n in names] == inodes
        assert dataset.egress["bytes"] > shard_bytes(padded)  # others were evicted meanwhile
        dataset.unpin_shards(pins)
        with pytest.raises(ValueError, match=r"Cannot pin \d+ shards: the cache limit"):
            dataset.pin_shards(range(dataset.num_shards))
        with pytest.raises(ValueError, match="Shard ids must be in"):
            dataset.pin_shards([dataset.num_shards])


def test_near_an_epochs_end_the_next_epochs_order_ranks_the_rest(padded, tmp_path) -> None:
    limit = os.path.getsize(os.path.join(padded, "index.json")) + shard_bytes(padded) // 2
    with StreamingDataset(remote=padded, local=str(tmp_path / "tail"), batch_size=4,
                          shuffle=True, cache_limit=limit) as dataset:
        samples = iter(dataset)
        for _ in range(N - 10):
            next(samples)
        uses = dataset._ss_cache.next_uses()
        assert uses is not None
        later = uses >= N  # past this epoch's end: ranked by the next epoch's first uses
        assert later.sum() >= dataset.num_shards - 11  # the last 10 samples use at most 10
        assert (uses != np.iinfo(np.int64).max).all()  # every shard is needed again
        assert len(set(uses[later].tolist())) > 1  # an order among them, not a tie
        del samples
