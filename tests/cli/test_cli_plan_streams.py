"""`streaming plan` with several streams: the same plan as a real `StreamingDataset`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from streaming import MDSWriter, Stream, StreamingDataset
from streaming.base.batching import generate_work
from streaming.cli.planning import PlanRequest, StreamSpec, plan_first_ids
from streaming.order.plan import OrderOptions
from streaming.order.world import World


def _write(out: str, n: int, first_id: int) -> list[int]:
    with MDSWriter(out=out, columns={"id": "int"}, size_limit=300) as writer:
        for i in range(n):
            writer.write({"id": first_id + i})
    from streaming import LocalDataset

    return [int(shard.samples) for shard in LocalDataset(out).shards]


@pytest.mark.parametrize("method", ["random", "stratified", "per_stream", "device_per_stream"])
def test_plan_matches_a_streaming_dataset(tmp_path: Any, method: str) -> None:
    sizes_a = _write(str(tmp_path / "a"), 37, 0)
    sizes_b = _write(str(tmp_path / "b"), 19, 37)
    assert len(sizes_a) > 1 and len(sizes_b) > 1
    dataset = StreamingDataset(
        streams=[Stream(local=str(tmp_path / "a"), proportion=0.6),
                 Stream(local=str(tmp_path / "b"), proportion=0.4)],
        batch_size=4, shuffle=True, shuffle_algo="py1e", epoch_size=70,
        batching_method=method, num_canonical_nodes=2, shuffle_block_size=16)
    try:
        world = World(1, 2, 2, 0)
        expected = generate_work(method, dataset, world, 1, 8)
    finally:
        dataset.close()
    request = PlanRequest(
        streams=[StreamSpec(sizes_a, proportion=0.6), StreamSpec(sizes_b, proportion=0.4)],
        options=OrderOptions(batch_size=4, shuffle=True, num_canonical_nodes=2,
                             shuffle_block_size=16, batching_method=method, epoch_size=70),
        nodes=1, ranks_per_node=2, workers=2, epoch=1, sample_in_epoch=8)
    got = plan_first_ids(request, 10**6)
    for entry in got["workers"]:
        ids = expected[0, entry["rank"], entry["worker"]].reshape(-1)
        assert entry["ids"] == ids[ids >= 0].tolist()
        assert entry["streams"] == [int(i >= 37) for i in entry["ids"]]
    assert sum(got["stream_chooses"]) == 70


def test_plan_command_takes_several_streams(cli: Callable, tmp_path: Any) -> None:
    _write(str(tmp_path / "a"), 20, 0)
    args = ["plan", str(tmp_path / "a"), "--shard-sizes", "5,5", "--choose", "-,20",
            "--batch-size", "2", "-k", "100"]
    plan = cli(*args, "--json").json()
    assert plan["stream_chooses"] == [20, 20] and plan["num_samples"] == 40
    (worker,) = plan["workers"]
    assert sorted(worker["ids"]) == sorted(list(range(20)) + list(range(20, 30)) * 2)
    assert worker["streams"] == [int(i >= 20) for i in worker["ids"]]
    text = cli(*args)
    assert text.code == 0 and "samples per stream this epoch: 20, 20" in text.out
    assert ":1" in text.out and ":0" in text.out
    bad = cli("plan", "--shard-sizes", "5", "--shard-sizes", "5", "--proportion", "1",
              "--batch-size", "2")
    assert bad.code == 2 and "one per stream" in bad.err
    mixed = cli("plan", "--shard-sizes", "5", "--shard-sizes", "5", "--proportion", "1,-",
                "--batch-size", "2")
    assert mixed.code != 0 and "incompatible" in (mixed.out + mixed.err)
    assert np.isfinite(plan["num_canonical_nodes"])
