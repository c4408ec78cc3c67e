"""Prefetch over a high-latency link: one fetch at a time against the link sizer.

Many small shards behind a proxy that holds every response for `--latency` seconds (an HTTP
server on 127.0.0.1 and the fault proxy of the test suite): with one fetch at a time the link
idles between requests; `LinkSizer` grows the number of concurrent fetches while that pays.
Each mode reads the whole dataset once from an empty cache in this process; the best of
`--repeat` is kept. Ours only (the peers have no equivalent setting).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from streaming import StreamingDataset  # noqa: E402
from streaming.prefetch import MAX_FETCHES_ENV  # noqa: E402
from tests.storage.proxy import Fault, FaultProxy  # noqa: E402
from tests.storage.sample_data import check_sample, write_local  # noqa: E402
from tests.storage.servers import start_http  # noqa: E402


def epoch(url: str, samples: int) -> float:
    """Seconds for one cold epoch (every sample checked once)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        dataset = StreamingDataset(remote=url, local=cache, batch_size=8, predownload=samples)
        got = sorted(check_sample(s) for s in dataset)
        dataset.close()
    if got != list(range(samples)):
        raise RuntimeError("samples missing or repeated")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the shards")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per response")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    samples = 400 if args.quick else 1600  # ~8 samples (~10 KB) per shard
    with tempfile.TemporaryDirectory() as root:
        server = start_http(os.path.join(root, "http"))
        url = server.fresh_url()
        src = os.path.join(root, "src")
        write_local(src, samples, compression=None, size_limit=1_200)
        for name in os.listdir(src):
            with open(os.path.join(src, name), "rb") as f:
                server.seed(f"{url}/{name}", f.read())
        rows = []
        try:
            for cap in ("1", None):
                best, connections = float("inf"), 0
                for _ in range(args.repeat):
                    if cap is None:
                        os.environ.pop(MAX_FETCHES_ENV, None)
                    else:
                        os.environ[MAX_FETCHES_ENV] = cap
                    proxy = FaultProxy(server.host_port)
                    proxy.reset(Fault("latency", delay=args.latency))
                    try:
                        seconds = epoch(url.replace(f":{server.host_port[1]}/",
                                                       f":{proxy.port}/"), samples)
                    finally:
                        proxy.stop()
                    if seconds < best:
                        best, connections = seconds, proxy.connections
                rows.append(("one fetch at a time" if cap else "link sizer", best, connections))
        finally:
            os.environ.pop(MAX_FETCHES_ENV, None)
            server.stop()
    print(f"bench_link: {samples:,} samples in ~{samples // 8} shards of ~10 KB, "
          f"{args.latency * 1e3:.0f} ms per response, cold cache, best of {args.repeat}")
    print(f"{'prefetch':<22}{'seconds':>9}{'connections':>13}")
    for name, seconds, connections in rows:
        print(f"{name:<22}{seconds:>9.2f}{connections:>13}")
    print(f"speed-up: {rows[0][1] / rows[1][1]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
