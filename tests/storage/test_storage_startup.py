"""Start-up order of the ranks of one node, made deterministic (`rank_worker.py` processes).

Whichever rank creates the node's shared state sets the cache up, so a non-leader that starts
first must not depend on the leader's files; and a rank that dies after start-up makes its peer's
epoch barrier fail within a second, not after the barrier's 10-minute deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.storage.sample_data import publish
from tests.storage.servers import REPO, Server, free_port

N = 160  # 4 shards
WORKER = "tests.storage.rank_worker"


class Node:
    """Two ranks of one simulated node, started one at a time."""

    def __init__(self, remote: str, tmp: Any) -> None:
        self.marks = tmp / "marks"
        self.marks.mkdir()
        self.cache = tmp / "cache"
        self.job = json.dumps({"remote": remote, "cache": str(self.cache),
                               "marks": str(self.marks)})
        self.port = free_port()
        self.procs: dict[int, subprocess.Popen] = {}

    def start(self, rank: int) -> None:
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(self.port),
                   PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
        self.procs[rank] = subprocess.Popen([sys.executable, "-m", WORKER, self.job], env=env,
                                            cwd=REPO, stderr=subprocess.PIPE)

    def wait_built(self, rank: int, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while not (self.marks / f"built-{rank}").exists():
            proc = self.procs[rank]
            if proc.poll() is not None:
                pytest.fail(f"rank {rank} failed at start-up:\n"
                            f"{proc.stderr.read().decode()[-3000:]}")  # type: ignore[union-attr]
            assert time.monotonic() < deadline, f"rank {rank} never finished its start-up"
            time.sleep(0.02)

    def go(self, rank: int) -> dict[str, Any]:
        (self.marks / f"go-{rank}").touch()
        return self.result(rank)

    def result(self, rank: int) -> dict[str, Any]:
        _, err = self.procs[rank].communicate(timeout=60)
        assert self.procs[rank].returncode == 0, err.decode()[-3000:]
        return json.loads((self.marks / f"result-{rank}.json").read_text())

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


@pytest.fixture
def node(http_server: Server, tmp_path: Any) -> Iterator[Node]:
    node = Node(publish(http_server, N), tmp_path)
    try:
        yield node
    finally:
        node.stop()


@pytest.mark.timeout(120)
def test_a_non_leader_that_starts_first_sets_the_node_up(node: Node) -> None:
    node.start(1)
    node.wait_built(1)  # used to fail: FileNotFoundError on <cache>/index.json
    assert (node.cache / "index.json").exists()  # cached by the rank that set the node up
    node.start(0)
    node.wait_built(0)
    (node.marks / "go-1").touch()
    results = [node.go(0), node.result(1)]
    ids = [r["ids"] for r in results]
    assert sorted(ids[0] + ids[1]) == list(range(N))  # the epoch, split between the two ranks
    assert results[0]["egress"]["bytes"] > 0


@pytest.mark.timeout(120)
def test_a_dead_rank_makes_the_epoch_barrier_fail_fast(node: Node) -> None:
    node.start(0)
    node.wait_built(0)
    node.start(1)
    node.wait_built(1)
    dead = node.procs[1].pid
    node.procs[1].kill()
    node.procs[1].wait()
    started = time.monotonic()
    result = node.go(0)
    assert time.monotonic() - started < 30  # the epoch barrier has no deadline of its own
    assert result["error"] == "CoordinationError", result
    assert f"member process {dead} is no longer running" in result["message"]
    assert "1 of 2 participants arrived" in result["message"]
