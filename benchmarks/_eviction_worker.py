"""One rank of the eviction benchmark: shuffled epochs under a cache limit (run by
bench_eviction.py, not a benchmark itself).

Runs under the interpreter of the library measured (ours or the reference mosaicml-streaming),
through public APIs only, so it imports nothing from this repository. The S3 server comes from
the environment; the rank from RANK / WORLD_SIZE / LOCAL_* (both libraries read them). Writes the
sample ids in the order the loop received them to `ids_out` (for the offline optimum) and prints
`RESULT <json>` as its last stdout line.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def main() -> None:
    spec = json.loads(sys.argv[1])
    from torch.utils.data import DataLoader

    from streaming import StreamingDataset

    dataset = StreamingDataset(remote=spec["url"], local=spec["cache"], shuffle=True,
                               shuffle_seed=spec["seed"], batch_size=spec["batch"],
                               shuffle_block_size=spec["block"],
                               cache_limit=spec["limit"], num_canonical_nodes=1)
    loader = DataLoader(dataset, batch_size=spec["batch"], num_workers=spec["workers"],
                        persistent_workers=spec["workers"] > 0)
    start = time.perf_counter()
    seen: list[np.ndarray] = []
    for _ in range(spec["epochs"]):
        for batch in loader:
            seen.append(np.asarray(batch["v"], np.int64))
    wall = time.perf_counter() - start
    ids = np.concatenate(seen) if seen else np.empty(0, np.int64)
    np.save(spec["ids_out"], ids)
    print("RESULT " + json.dumps({"samples": int(len(ids)), "wall": wall}), flush=True)


if __name__ == "__main__":
    main()
