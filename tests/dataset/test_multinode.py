"""Real multi-node runs: processes with torch.distributed (gloo) on 127.0.0.1.

Nodes are simulated as groups of LOCAL_WORLD_SIZE ranks with separate cache directories, so each
node downloads, coordinates and plans on its own, as on separate machines.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest

from streaming import MDSWriter

pytestmark = pytest.mark.slow

WORKER = os.path.join(os.path.dirname(__file__), "multinode_worker.py")
REUSE_WORKER = os.path.join(os.path.dirname(__file__), "reuse_worker.py")
LAUNCH_WORKER = os.path.join(os.path.dirname(__file__), "launch_worker.py")
REBUILD_WORKER = os.path.join(os.path.dirname(__file__), "rebuild_worker.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM = 512


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(nodes: int, ranks: int, job: dict, tmp, worker: str = WORKER) -> list[dict]:
    """Launch nodes*ranks processes; return each rank's report, by rank."""
    world = nodes * ranks
    port = free_port()
    procs, outs = [], []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world),
                   LOCAL_RANK=str(rank % ranks), LOCAL_WORLD_SIZE=str(ranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        out = str(tmp / f"r{rank}-{port}.json")
        outs.append(out)
        procs.append(subprocess.Popen([sys.executable, worker, json.dumps(job), out], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err.decode()[-3000:]
    finally:  # a rank stuck after another failed must not outlive the test
        for proc in procs:
            proc.kill()
            proc.wait()
    return [json.load(open(o)) for o in outs]


def global_order(reports: list[dict]) -> list[list[int]]:
    """The job's global batches: batch j = every rank's j-th batch (as a sorted list).

    The planner fixes which samples form each global batch; how a batch is split over devices
    depends on the world, so batches are compared as sets.
    """
    rounds = min(len(r["batches"]) for r in reports)
    return [sorted(i for r in reports for i in r["batches"][j]) for j in range(rounds)]


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("mn") / "remote")
    rng = np.random.default_rng(1)
    with MDSWriter(out=out, columns={"id": "int", "x": "ndarray:uint8:16"},
                   size_limit=1200) as writer:
        for i in range(NUM):
            writer.write({"id": i, "x": rng.integers(0, 255, 16, dtype=np.uint8)})
    return out


def every_sample_once(remote: str, tmp_path, num: int) -> list[dict]:
    """A 2x2 job (2 workers per rank) yields every sample once, in the global order of one
    process; returns the 2x2 job's reports (shared with the Parquet tests)."""
    job = dict(remote=remote, cache=str(tmp_path / "c22"), batch_size=8, workers=2, ncn=2)
    reports = run_job(2, 2, job, tmp_path)
    seen = [i for r in reports for b in r["batches"] for i in b]
    assert sorted(seen) == list(range(num))
    single = run_job(1, 1, dict(job, cache=str(tmp_path / "c11"), batch_size=32, workers=0),
                     tmp_path)
    assert global_order(reports) == global_order(single)
    return reports


def elastic_resume(remote: str, tmp_path, num: int) -> None:
    """Resuming 2x2 -> 1x4 -> 4x1 mid-epoch yields exactly the one-process epoch."""
    base = dict(remote=remote, batch_size=8, workers=0, ncn=4)
    full = global_order(run_job(1, 1, dict(base, cache=str(tmp_path / "full"), batch_size=32),
                                tmp_path))
    first = run_job(2, 2, dict(base, cache=str(tmp_path / "a"), take=5), tmp_path)
    state = first[0]["state"]
    assert state["sample_in_epoch"] == 5 * 32 and state["initial_physical_nodes"] == 2
    second = run_job(1, 4, dict(base, cache=str(tmp_path / "b"), take=4, resume=state), tmp_path)
    state2 = second[0]["state"]
    assert state2["sample_in_epoch"] == 9 * 32
    third = run_job(4, 1, dict(base, cache=str(tmp_path / "c"), resume=state2), tmp_path)
    order = global_order(first) + global_order(second) + global_order(third)
    assert order == full
    assert sorted(i for batch in order for i in batch) == list(range(num))


def test_every_sample_once_and_same_order_as_one_process(remote, tmp_path) -> None:
    reports = every_sample_once(remote, tmp_path, NUM)
    # each node fetched only its share: together about one copy of the dataset
    dataset_bytes = sum(os.path.getsize(os.path.join(remote, f)) for f in os.listdir(remote)
                        if f.endswith(".mds"))
    fetched = sum(r["egress"]["bytes"] for r in reports if r["rank"] % 2 == 0)
    assert fetched <= 1.5 * dataset_bytes
    # Runtime metrics add up over a node's ranks and their workers: each rank reads the
    # node's total, which is what the node's two ranks yielded.
    for node in range(2):
        ranks = [r for r in reports if r["rank"] // 2 == node]
        seen_here = sum(len(b) for r in ranks for b in r["batches"])
        for r in ranks:
            assert r["metrics"]["samples"] == seen_here
            assert r["metrics"]["loader_batches"] == sum(len(x["batches"]) for x in ranks)
            # Egress is the shards' downloads plus the first batches' early reads.
            m = r["metrics"]
            assert m["fetch_bytes"] + m["early_bytes"] == r["egress"]["bytes"]


def test_elastic_resume_2x2_then_1x4_then_4x1(remote, tmp_path) -> None:
    elastic_resume(remote, tmp_path, NUM)


@pytest.mark.parametrize("with_remote", [True, False], ids=["remote", "local-only"])
def test_a_dataset_rebuilt_while_a_peer_rank_still_holds_the_old_one_starts_afresh(
        remote, tmp_path, with_remote: bool) -> None:
    """Rank 0 drops its dataset and builds a new one over the same directory while rank 1 of
    its node still holds the old one: the new one is epoch 0 again, in the same order, on every
    rank (it used to adopt the old one's node state: epoch 1's order, or a stuck barrier)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    local = str(tmp_path / "cache" / "node{node}")
    if not with_remote:  # the dataset lives in each node's directory itself
        for node in range(1):
            shutil.copytree(remote, local.format(node=node))
    job = dict(remote=remote if with_remote else None, local=local, marks=str(marks))
    reports = run_job(1, 2, job, tmp_path, REUSE_WORKER)
    for report in reports:
        assert report["second"] == report["first"], f"rank {report['rank']} changed its order"
        assert report["epochs"][0] == report["epochs"][1]
    seen = sorted(i for r in reports for i in r["second"])
    assert seen == list(range(NUM))


PLAN_ERROR_WORKER = os.path.join(os.path.dirname(__file__), "plan_error_worker.py")


def test_a_planning_error_reaches_every_rank_of_the_node(tmp_path) -> None:
    """Only the node's leader plans; its error (a stream too small for stratified batches)
    used to leave the other ranks waiting at the epoch barrier for NODE_WAIT_TIMEOUT (600 s),
    then failing with a bare timeout that did not say why."""
    remotes = []
    for name, count in (("big", 200), ("small", 1)):
        remotes.append(str(tmp_path / name))
        with MDSWriter(out=remotes[-1], columns={"id": "int"}) as writer:
            for i in range(count):
                writer.write({"id": i})
    reports = run_job(1, 2, {"remotes": remotes, "cache": str(tmp_path / "cache")}, tmp_path,
                      worker=PLAN_ERROR_WORKER)
    for report in reports:
        raised = report["raised"]
        assert raised is not None and "ValueError" in raised["types"], report
        assert "Number of samples for stream 1 is 0" in raised["text"], report
        assert report["seconds"] < 120, report  # not the node's 600 s deadline


@pytest.mark.parametrize("before_init", [False, True])
def test_a_launcher_without_rank_variables(remote, tmp_path, before_init: bool) -> None:
    """Lightning's `ddp` sets WORLD_SIZE and LOCAL_RANK only. Both ranks read as rank 0 and
    took the same half of the data, silently; now the rank and this machine's rank count come
    from torch.distributed, and a dataset built before the process group says what to set."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_WORLD_SIZE")}
    env.update(WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    procs, outs = [], []
    for rank in range(2):
        job = dict(remote=remote, cache=str(tmp_path / "cache"), rank=rank, port=port,
                   before_init=before_init)
        outs.append(str(tmp_path / f"launch{rank}.json"))
        procs.append(subprocess.Popen([sys.executable, LAUNCH_WORKER, json.dumps(job), outs[-1]],
                                      env=dict(env, LOCAL_RANK=str(rank)),
                                      stderr=subprocess.PIPE))
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err.decode()[-3000:]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    reports = [json.load(open(out)) for out in outs]
    if before_init:
        for report in reports:
            assert report["error"].startswith("MissingRankError: WORLD_SIZE is 2 but RANK is "
                                              "not set and torch.distributed is not initialised")
        return
    assert [r["num_nodes"] for r in reports] == [1, 1]  # one machine: one node of two ranks
    assert sorted(reports[0]["ids"] + reports[1]["ids"]) == list(range(NUM))


def test_ranks_of_a_node_rebuild_their_dataset_each_epoch(remote, tmp_path) -> None:
    """Lightning DDP with `reload_dataloaders_every_n_epochs=1`: both ranks of a node build the
    dataset again with the same arguments while still holding the last one. Each gives way in
    its process and waits for its peer's (it failed with "Reused local directory": the peer's
    hold looked like this process's own live dataset)."""
    job = dict(remote=remote, cache=str(tmp_path / "cache"), epochs=3)
    reports = run_job(1, 2, job, tmp_path, worker=REBUILD_WORKER)
    for epoch in range(3):
        ids = reports[0]["epochs"][epoch] + reports[1]["epochs"][epoch]
        assert sorted(ids) == list(range(NUM)), epoch


def test_a_peer_rank_started_by_rank_0_rebuilds_in_step(remote, tmp_path) -> None:
    """Lightning's default DDP launcher starts rank 1 as a child process of rank 0: that peer's
    hold on the old dataset is not one of rank 0's DataLoader workers (parentage said it was,
    and rank 0 refused its rebuild while rank 1 waited for it)."""
    job = dict(remote=remote, cache=str(tmp_path / "cache"), epochs=3, peer_from_rank_0=True)
    env = dict(os.environ, RANK="0", WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="2",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, REBUILD_WORKER, json.dumps(job),
                           str(tmp_path / "r0.json")], env=env, capture_output=True, timeout=240)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    reports = [json.load(open(tmp_path / f"r{rank}.json")) for rank in (0, 1)]
    for epoch in range(3):
        ids = reports[0]["epochs"][epoch] + reports[1]["epochs"][epoch]
        assert sorted(ids) == list(range(NUM)), epoch
