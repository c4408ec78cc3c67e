"""Egress accounting: after one epoch on N simulated nodes, each node fetched only its shards.

Nodes are groups of LOCAL_WORLD_SIZE processes with their own cache directory (as on separate
machines), ranks set by RANK/WORLD_SIZE/LOCAL_WORLD_SIZE, all streaming one S3 dataset (moto).
The shards a node needs are computed from the plan it executed (the shard of every sample its
ranks yielded); each node must fetch at most 1.05x their bytes, and the job's total is reported
as bytes fetched / dataset bytes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest

from tests.storage.sample_data import fetched_bytes_per_shard, index_of, publish, shard_of_sample
from tests.storage.servers import REPO, Server, free_port

WORKER = "tests.storage.egress_worker"
N = 1_200  # ~30 shards


def run_epoch(nodes: int, ranks: int, job: dict[str, Any], env: dict[str, str],
              tmp: Any) -> list[dict[str, Any]]:
    """Launch nodes*ranks processes for one epoch; return each rank's report, by rank."""
    world, port = nodes * ranks, free_port()
    reports = tmp / f"reports-{port}"
    reports.mkdir()
    procs = []
    # All ranks start together, in any order: whichever rank of a node creates its shared state
    # sets the cache up (test_storage_startup.py pins the non-leader-first order).
    for rank in range(world):
        cache = tmp / f"node{rank // ranks}"
        node_job = dict(job, cache=str(cache), reports=str(reports))
        rank_env = dict(env, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank % ranks),
                        LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=str(port),
                        PYTHONPATH=os.pathsep.join([REPO, env.get("PYTHONPATH", "")]))
        procs.append(subprocess.Popen([sys.executable, "-m", WORKER, json.dumps(node_job)],
                                      env=rank_env, cwd=REPO, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err.decode()[-3000:]
    except subprocess.TimeoutExpired:
        for proc in procs:
            proc.send_signal(signal.SIGUSR1)  # each worker dumps its threads (faulthandler)
        time.sleep(1)
        for proc in procs:
            proc.kill()
        tails = [proc.communicate()[1].decode()[-2500:] for proc in procs]
        pytest.fail("an epoch rank hung; their stacks:\n" + "\n---\n".join(tails))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return [json.loads((reports / f"rank{rank}.json").read_text()) for rank in range(world)]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_each_node_fetches_only_the_shards_its_samples_live_in(
        moto_server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
        record_property: Any) -> None:
    moto_server.apply_env(monkeypatch)
    remote = publish(moto_server, N)
    index = index_of(remote)
    shard_bytes = fetched_bytes_per_shard(index)
    nodes, ranks = 2, 2
    job = {"remote": remote, "batch_size": 8, "ncn": nodes}
    reports = run_epoch(nodes, ranks, job, dict(os.environ), tmp_path)

    seen = np.concatenate([r["ids"] for r in reports])
    assert np.array_equal(np.sort(seen), np.arange(N))  # the epoch covered every sample once
    total = 0
    for node in range(nodes):
        mine = [r for r in reports if r["node"] == node]
        ids = np.concatenate([r["ids"] for r in mine])
        needed = int(shard_bytes[np.unique(shard_of_sample(index, ids))].sum())
        fetched = {r["egress"]["bytes"] for r in mine}
        assert len(fetched) == 1, "ranks of one node share one egress counter"
        fetched_bytes = fetched.pop()
        assert needed <= fetched_bytes <= 1.05 * needed, (node, fetched_bytes, needed)
        assert fetched_bytes < int(shard_bytes.sum())  # a node never pulls the whole dataset
        total += fetched_bytes
    ratio = total / int(shard_bytes.sum())
    record_property("egress_ratio", ratio)
    print(f"\negress: {nodes} nodes x {ranks} ranks fetched {total} bytes for a "
          f"{int(shard_bytes.sum())}-byte dataset: {ratio:.3f}x")
    assert 1.0 <= ratio <= nodes
