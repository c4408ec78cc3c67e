"""One timed construction of `StreamingDataset` over an index, in a fresh process.

Run under the measured library's interpreter (ours with the repository on PYTHONPATH, or the
reference's venv); imports nothing from this repository. Prints `RESULT <json>`.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    spec = json.loads(sys.argv[1])
    from streaming import StreamingDataset  # imports (torch included) before the timer

    start = time.perf_counter()
    ds = StreamingDataset(remote=spec["remote"], local=spec["local"], batch_size=256)
    construct = time.perf_counter() - start
    result = {"construct": construct, "shards": int(ds.num_shards),
              "samples": int(ds.num_samples)}
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
