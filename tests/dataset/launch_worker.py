"""One process of a job whose launcher sets neither RANK nor LOCAL_WORLD_SIZE (as Lightning's
`strategy="ddp"`: WORLD_SIZE and LOCAL_RANK only), launched by test_multinode.py.

argv: job JSON (remote, cache, rank, port, `before_init`), output path. The rank reaches
torch.distributed only through `init_process_group`'s arguments. Writes the sample ids this
rank saw, or the error the dataset's constructor raised.
"""

from __future__ import annotations

import json
import sys

import torch.distributed as dist

from streaming import StreamingDataLoader, StreamingDataset


def main() -> None:
    job, out = json.loads(sys.argv[1]), sys.argv[2]

    def build() -> StreamingDataset:
        return StreamingDataset(remote=job["remote"], local=job["cache"], batch_size=8,
                                shuffle=True, num_canonical_nodes=2)

    if job.get("before_init"):
        try:
            build()
        except Exception as err:
            with open(out, "w") as f:
                json.dump({"error": f"{type(err).__name__}: {err}"}, f)
            return
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{job['port']}",
                            rank=job["rank"], world_size=2)
    dataset = build()
    ids = [i for batch in StreamingDataLoader(dataset, batch_size=8, num_workers=2)
           for i in batch["id"].tolist()]
    dist.barrier()
    with open(out, "w") as f:
        json.dump({"ids": ids, "num_nodes": dataset._unique_world.num_nodes}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
