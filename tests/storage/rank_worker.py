"""One rank of a one-node job whose start-up order a test controls (test_storage_startup.py).

argv[1] is the job (JSON: remote, cache dir, a directory for marker files). The rank comes from
RANK/WORLD_SIZE/LOCAL_WORLD_SIZE. The rank builds its dataset, writes `built-<rank>`, waits for
`go-<rank>`, runs one epoch and writes `result-<rank>.json`: the sample ids, or the error.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

from streaming import StreamingDataset


def _wait_for(path: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"{path} never appeared")
        time.sleep(0.02)


def main() -> None:
    job = json.loads(sys.argv[1])
    rank, marks = int(os.environ["RANK"]), job["marks"]
    dataset = StreamingDataset(remote=job["remote"], local=job["cache"], batch_size=4)
    open(os.path.join(marks, f"built-{rank}"), "w").close()
    _wait_for(os.path.join(marks, f"go-{rank}"), 60)
    try:
        result: dict = {"ids": [int(sample["id"]) for sample in dataset]}
    except Exception as err:  # noqa: BLE001  (the test inspects it)
        result = {"error": type(err).__name__, "message": str(err),
                  "trace": traceback.format_exc()}
    result["egress"] = dataset.egress
    with open(os.path.join(marks, f"result-{rank}.json"), "w") as f:
        json.dump(result, f)
    dataset.close()


if __name__ == "__main__":
    main()
