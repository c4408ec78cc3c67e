"""One rank of a job checking that every rank built the same dataset, launched by
test_job_agreement.py.

argv: job JSON (remote, cache, seeds per rank, `peek`: rank 0 first builds another dataset of
its own, with another seed, from another line), output path. Writes the sample ids this rank
saw, or the error its constructor raised.
"""

from __future__ import annotations

import json
import os
import sys

import torch.distributed as dist

from streaming import StreamingDataset
from streaming.coord.job_agreement import DifferentArgumentsError


def main() -> None:
    job, out = json.loads(sys.argv[1]), sys.argv[2]
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    cache = os.path.join(job["cache"], str(rank))

    def build(seed: int, local: str) -> StreamingDataset:
        return StreamingDataset(remote=job["remote"], local=local, batch_size=4, shuffle=True,
                                shuffle_seed=seed, num_canonical_nodes=2)

    if job.get("peek") and rank == 0:
        build(12345, cache + "-peek").close()
    try:
        dataset = build(job["seeds"][rank], cache)
    except DifferentArgumentsError as err:
        report: dict = {"error": str(err)}
    else:
        report = {"ids": [sample["v"] for sample in dataset]}
    with open(out, "w") as f:
        json.dump(report, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
