"""One rank of a job that reads a dataset, drops it and builds another over the same directory.

Launched by test_multinode.py (not collected). Rank 0 drops its first dataset and builds the
second while rank 1 still holds its first: the second must start a fresh node state (epoch 0,
same order), never adopt what is left of the first. Argv: the job as JSON, the report path.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import sys
import time
from pathlib import Path

import torch.distributed as dist

from streaming import StreamingDataLoader, StreamingDataset

DEADLINE = 120.0


class _TouchOnWait(logging.Handler):
    """Touches a file when this process logs that it waits for a peer's earlier dataset."""

    def __init__(self, path: Path) -> None:
        super().__init__(logging.INFO)
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        if "still hold" in record.getMessage():
            self.path.touch()


def _wait_for_any(*paths: Path) -> None:
    deadline = time.monotonic() + DEADLINE
    while not any(p.exists() for p in paths):
        if time.monotonic() > deadline:
            raise TimeoutError(f"none of {paths} appeared")
        time.sleep(0.01)


def _epoch(job: dict, node: int, built: Path) -> tuple[StreamingDataLoader, list[int], int]:
    dataset = StreamingDataset(remote=job["remote"], local=job["local"].format(node=node),
                               batch_size=8, shuffle=True, shuffle_seed=7, num_canonical_nodes=1)
    built.touch()
    loader = StreamingDataLoader(dataset, batch_size=8, num_workers=0)
    ids = [i for batch in loader for i in batch["id"].tolist()]
    return loader, ids, int(loader.state_dict()["epoch"])


def main() -> None:
    job = json.loads(sys.argv[1])
    marks = Path(job["marks"])
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    node = rank // int(os.environ["LOCAL_WORLD_SIZE"])
    logging.getLogger("streaming.coord").addHandler(_TouchOnWait(marks / f"r{rank}-waiting"))
    logging.getLogger("streaming.coord").setLevel(logging.INFO)
    loader, first, first_epoch = _epoch(job, node, marks / f"r{rank}-built-first")
    if rank == 1:  # hold the first dataset until rank 0 built its second or waits for ours
        _wait_for_any(marks / "r0-built", marks / "r0-waiting")
    del loader
    gc.collect()
    loader, second, second_epoch = _epoch(job, node, marks / f"r{rank}-built")
    del loader
    dist.barrier()
    with open(sys.argv[2], "w") as f:
        json.dump({"rank": rank, "first": first, "second": second,
                   "epochs": [first_epoch, second_epoch]}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
