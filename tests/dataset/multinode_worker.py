"""One rank of a simulated multi-node job (launched by test_multinode.py, not collected).

Reads its job from argv[1] (JSON): remote, the node's cache dir, batch size, workers, how many
batches to take (or all), and an optional checkpoint to resume from. Writes the batches it saw
and rank 0's state dict to argv[2].
"""

from __future__ import annotations

import json
import os
import sys

import torch.distributed as dist

from streaming import StreamingDataLoader, StreamingDataset


def main() -> None:
    job = json.loads(sys.argv[1])
    out = sys.argv[2]
    dist.init_process_group("gloo", init_method="env://")
    node = int(os.environ["RANK"]) // int(os.environ["LOCAL_WORLD_SIZE"])
    dataset = StreamingDataset(remote=job["remote"], local=f"{job['cache']}/node{node}",
                               batch_size=job["batch_size"], shuffle=True,
                               shuffle_block_size=job.get("block", 64),
                               num_canonical_nodes=job["ncn"])
    loader = StreamingDataLoader(dataset, batch_size=job["batch_size"],
                                 num_workers=job["workers"])
    if job.get("resume"):
        loader.load_state_dict(job["resume"])
    batches = []
    for batch in loader:
        batches.append(batch["id"].tolist())
        if job.get("take") and len(batches) == job["take"]:
            break
    state = loader.state_dict()
    loader.close()  # workers gone: every process of the node has counted what it did
    dist.barrier()
    with open(out, "w") as f:
        json.dump({"rank": dist.get_rank(), "batches": batches, "state": state,
                   "egress": dataset.egress, "metrics": dataset.metrics()}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
