"""One rank of a simulated multi-node epoch over S3 (run by test_storage_egress.py, not collected).

argv[1] is the job (JSON: remote, this node's cache dir, batch size, canonical nodes, a directory
for reports). The rank, world and node layout come from RANK/WORLD_SIZE/LOCAL_WORLD_SIZE, the S3
server from S3_ENDPOINT_URL/AWS_*. After the epoch every rank waits for the others of its node
(a file barrier), so the node's egress counter is final when it is read.
"""

from __future__ import annotations

import faulthandler
import glob
import json
import os
import signal
import sys
import time

from streaming import StreamingDataset


def main() -> None:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for stacks on a hang
    job = json.loads(sys.argv[1])
    rank, per_node = int(os.environ["RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    node = rank // per_node
    dataset = StreamingDataset(remote=job["remote"], local=job["cache"],
                               batch_size=job["batch_size"], shuffle=True,
                               num_canonical_nodes=job["ncn"], validate_hash="xxh64")
    ids = [int(sample["id"]) for sample in dataset]
    done = os.path.join(job["reports"], f"done-node{node}-rank{rank}")
    open(done, "w").close()
    deadline = time.monotonic() + 120
    while len(glob.glob(os.path.join(job["reports"], f"done-node{node}-*"))) < per_node:
        if time.monotonic() > deadline:
            sys.exit("the other ranks of this node never finished")
        time.sleep(0.02)
    report = {"rank": rank, "node": node, "ids": ids, "egress": dataset.egress}
    with open(os.path.join(job["reports"], f"rank{rank}.json"), "w") as f:
        json.dump(report, f)
    # Hold the node's shared state until every rank of the node has read the counter.
    open(os.path.join(job["reports"], f"read-node{node}-rank{rank}"), "w").close()
    while len(glob.glob(os.path.join(job["reports"], f"read-node{node}-*"))) < per_node:
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    dataset.close()


if __name__ == "__main__":
    main()
