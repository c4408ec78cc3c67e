"""One rank of a job (two ranks on one node) that builds its dataset again with the same
arguments after each epoch, as Lightning's `reload_dataloaders_every_n_epochs` does under DDP,
launched by test_multinode.py.

argv: job JSON (remote, cache, epochs, and `peer_from_rank_0`: rank 0 starts rank 1 itself,
as a child process, as Lightning's default DDP launcher does), output path. Writes the sample
ids of each epoch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import torch.distributed as dist

from streaming import StreamingDataLoader, StreamingDataset


def main() -> None:
    job, out = json.loads(sys.argv[1]), sys.argv[2]
    peer = None
    if job.get("peer_from_rank_0") and os.environ["RANK"] == "0":
        peer = subprocess.Popen([sys.executable, __file__, sys.argv[1],
                                 os.path.join(os.path.dirname(out), "r1.json")],
                                env=dict(os.environ, RANK="1", LOCAL_RANK="1"))
    dist.init_process_group("gloo")
    epochs, kept = [], []
    for _ in range(job["epochs"]):
        dataset = StreamingDataset(remote=job["remote"], local=job["cache"], batch_size=8,
                                   shuffle=True)
        loader = StreamingDataLoader(dataset, batch_size=8)
        kept.append((dataset, loader))  # the framework still holds the last epoch's
        epochs.append([i for batch in loader for i in batch["id"].tolist()])
    dist.barrier()
    with open(out, "w") as f:
        json.dump({"epochs": epochs}, f)
    dist.destroy_process_group()
    if peer is not None and peer.wait() != 0:
        sys.exit(f"rank 1 failed ({peer.returncode})")


if __name__ == "__main__":
    main()
