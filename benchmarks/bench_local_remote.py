"""A cold epoch of 100 KB images from a local "remote" folder: how fast shards reach the cache.

20,000 samples of 100,000 random bytes (256 distinct payloads cycled) plus an int label, in
64 MiB MDS shards, sit in a folder used as `remote`; each pass builds a `StreamingDataset`
with a new, empty `local` cache and reads every sample once in one process, every byte
touched by the consumer (an xor over a uint64 view). Timed from construction to the last
sample, so the copies of the shards into the cache are inside the timer. Best of `--repeat`
fresh processes, one per pass. The remote sits in /dev/shm when there is one, and the machine
is synced before each pass, so one pass's writeback does not slow the next.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scratch import memory_tempdir  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WRITE = """
import sys, numpy as np
from streaming import MDSWriter
rng = np.random.default_rng(0)
payloads = [rng.integers(0, 256, 100_000, dtype=np.uint8).tobytes() for _ in range(256)]
with MDSWriter(out=sys.argv[1], columns={"image": "bytes", "label": "int"}) as writer:
    for i in range(int(sys.argv[2])):
        writer.write({"image": payloads[i % 256], "label": i})
"""

READ = """
import sys, time, numpy as np
from streaming import StreamingDataset
start = time.perf_counter()
total = acc = 0
ds = StreamingDataset(remote=sys.argv[1], local=sys.argv[2], batch_size=256)
for sample in ds:
    image = sample["image"]
    acc ^= int(np.bitwise_xor.reduce(np.frombuffer(image, np.uint64))) ^ sample["label"]
    total += len(image)
print(total / (time.perf_counter() - start) / 1e6)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 samples")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache-parent", default=tempfile.gettempdir(),
                        help="where the empty caches are made (default: the temp dir)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": REPO}
    n = 2_000 if args.quick else 20_000
    # The remote lives in RAM when it can (its reads are then the same for every pass) and is
    # synced before the first pass (so no pass pays for writing back the one before).
    work = memory_tempdir("bench_local_remote-")
    try:
        remote = os.path.join(work, "remote")
        subprocess.run([sys.executable, "-c", WRITE, remote, str(n)], env=env, check=True)
        os.sync()
        rates = []
        for i in range(args.repeat):
            cache = tempfile.mkdtemp(prefix=f"cache{i}-", dir=args.cache_parent)
            try:
                out = subprocess.run([sys.executable, "-c", READ, remote, cache], env=env,
                                     check=True, capture_output=True, text=True).stdout
            finally:
                shutil.rmtree(cache, ignore_errors=True)
                os.sync()
            rates.append(float(out.strip().splitlines()[-1]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n## cold epoch from a local remote ({n:,} x 100 KB, cache under "
          f"{args.cache_parent})\n")
    print("| passes (MB/s of image bytes) | best |")
    print("|---|---|")
    print(f"| {', '.join(f'{r:,.0f}' for r in rates)} | {max(rates):,.0f} |")


if __name__ == "__main__":
    main()
