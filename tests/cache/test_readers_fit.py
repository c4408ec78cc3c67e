"""A cache limit that cannot keep a shard for each of the node's readers is refused when an
epoch starts: with 8 workers and room for 4 shards the loader hung (as the reference's does)."""

from __future__ import annotations

import numpy as np
import pytest

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
from streaming.cache.limits import check_readers_fit


def test_the_arithmetic() -> None:
    raw = np.array([100, 300, 200, 300, 300])
    packed = raw + 150  # raw + zip
    check_readers_fit(10 + 2 * 300 + 450, 10, raw, packed, readers=3)  # exactly enough
    with pytest.raises(ValueError, match="each of this node's 3 readers.*at least 1060"):
        check_readers_fit(1059, 10, raw, packed, readers=3)
    check_readers_fit(500, 10, raw, packed, readers=1)  # one reader: the construction's check


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_too_many_workers_for_the_limit_fail_at_once(tmp_path) -> None:
    remote = str(tmp_path / "remote")
    with MDSWriter(out=remote, columns={"x": "bytes"}, size_limit=1 << 12,
                   compression=None) as writer:
        for _ in range(40):
            writer.write({"x": bytes(1000)})
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=2,
                               cache_limit=5 * 3300)  # passes the 4-shards check: ~5 shards
    with pytest.raises(ValueError, match="cannot keep a shard for each of this node's 6"):
        next(iter(StreamingDataLoader(dataset, batch_size=2, num_workers=6)))
    assert len(list(StreamingDataLoader(dataset, batch_size=2, num_workers=2))) == 20


def test_a_cache_holding_the_whole_dataset_is_never_refused() -> None:
    """More readers than shards, or room for every shard: nothing ever waits for room (it
    was refused: 6 readers x the largest shard exceeded a limit holding all 5 shards)."""
    raw = np.full(5, 800_000)
    check_readers_fit(10 + 5 * 800_000, 10, raw, raw, readers=6)
    check_readers_fit(10 + 3 * 800_000, 10, raw[:3], raw[:3], readers=64)
    with pytest.raises(ValueError, match="each of this node's 6 readers"):
        check_readers_fit(10 + 4 * 800_000, 10, raw, raw, readers=6)
