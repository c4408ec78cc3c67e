"""One rank of a node whose epoch cannot be planned (launched by test_multinode.py).

argv[1]: JSON with the two streams' dirs and the node's cache dir; argv[2]: where to write what
this rank's iteration raised and how long that took. The rank stays alive after its error (as a
training script that catches it would), so no other rank can learn of it from its exit.
"""

from __future__ import annotations

import json
import sys
import time

import torch.distributed as dist

from streaming import Stream, StreamingDataset


def main() -> None:
    job = json.loads(sys.argv[1])
    dist.init_process_group("gloo", init_method="env://")
    streams = [Stream(remote=remote, local=f"{job['cache']}/{i}")
               for i, remote in enumerate(job["remotes"])]
    dataset = StreamingDataset(streams=streams, batch_size=4, batching_method="stratified")
    start = time.monotonic()
    try:
        next(iter(dataset))
        raised = None
    except Exception as err:  # noqa: BLE001 (reported)
        raised = {"types": [t.__name__ for t in type(err).__mro__], "text": str(err)}
    took = time.monotonic() - start
    dist.barrier()
    with open(sys.argv[2], "w") as f:
        json.dump({"rank": dist.get_rank(), "raised": raised, "seconds": took}, f)
    dataset.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
