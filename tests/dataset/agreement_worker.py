"""One rank of a job checking that every rank built the same dataset, launched by
test_job_agreement.py.

argv: job JSON, output path. The job gives each rank its datasets (`plans[rank]`, built one
after another from one line, so a rank may build them in its own order: each a dict of `name`,
`remote`, `seed`, and optionally `shuffle` (default True), `numpy` (the seed as a numpy
integer) and `replication`), and `peek`: rank 0 first builds another dataset of its own, with
another seed, from another line; `first`: the rank that builds its datasets first (the others
wait for it through the job's store). Ranks of one node share a cache directory. Writes the sample
ids this rank saw per dataset, the error a constructor raised (`error`), or the error an
iteration raised (`iter_error`).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import torch.distributed as dist

from streaming import StreamingDataset
from streaming.coord.job_agreement import DifferentArgumentsError
from streaming.errors import CoordinationError


def main() -> None:
    job, out = json.loads(sys.argv[1]), sys.argv[2]
    rank = int(os.environ["RANK"])
    node = rank // int(os.environ["LOCAL_WORLD_SIZE"])
    dist.init_process_group("gloo")
    cache = os.path.join(job["cache"], f"node{node}")

    def build(spec: dict, local: str) -> StreamingDataset:
        seed = np.int64(spec["seed"]) if spec.get("numpy") else spec["seed"]
        return StreamingDataset(remote=spec["remote"], local=local, batch_size=4,
                                shuffle=spec.get("shuffle", True), shuffle_seed=seed,
                                num_canonical_nodes=2, replication=spec.get("replication"))

    if job.get("peek") and rank == 0:
        build({"remote": job["plans"][0][0]["remote"], "seed": 12345}, cache + "-peek").close()
    report: dict = {}
    datasets = {}
    store = dist.distributed_c10d._get_default_store()
    if job.get("first") is not None and rank != job["first"]:
        store.wait(["first-built"])
    try:
        for spec in job["plans"][rank]:
            datasets[spec["name"]] = build(spec, os.path.join(cache, spec["name"]))
    except DifferentArgumentsError as err:
        report["error"] = str(err)
    if job.get("first") == rank:
        store.set("first-built", "1")
    if "error" not in report:
        try:
            report["ids"] = {name: [s["v"] for s in ds] for name, ds in datasets.items()}
        except CoordinationError as err:
            report["iter_error"] = str(err)
    with open(out, "w") as f:
        json.dump(report, f)
    if "error" not in report:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
