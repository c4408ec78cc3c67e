"""Measure `transfer.fetch` of one 64 MiB object per backend (a script, not a test).

Run from the repository root: ``.venv/bin/python -m tests.storage.throughput [--mib 64]``.
Starts each server from `tests.storage.servers` on 127.0.0.1, seeds the object around the store,
fetches it three times into a temp dir and prints the best MiB/s. Servers that cannot run here
are reported and skipped.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable

from streaming.storage import fetch, open_store
from tests.storage import servers


def _measure(server: servers.Server, size: int, workdir: str, runs: int = 3) -> float:
    root = server.fresh_url()
    server.seed(f"{root}/big.bin", os.urandom(size))
    store = open_store(root, **server.options)
    best = 0.0
    for i in range(runs):
        target = os.path.join(workdir, f"{server.name}-{i}.bin")
        result = fetch(store, "big.bin", target, retries=1, timeout=300)
        assert result.bytes == size
        best = max(best, size / result.seconds / (1 << 20))
        os.remove(target)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=64)
    args = parser.parse_args()
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_EC2_METADATA_DISABLED="true", NO_GCE_CHECK="True")
    with tempfile.TemporaryDirectory() as tmp:
        starters: list[tuple[str, Callable[[], servers.Server]]] = [
            ("local", lambda: servers.start_local(os.path.join(tmp, "local"))),
            ("moto", servers.start_moto),
            ("seaweedfs", lambda: servers.start_seaweed(tmp)),
            ("fake-gcs", servers.start_fake_gcs),
            ("azurite", servers.start_azurite),
            ("http", lambda: servers.start_http(os.path.join(tmp, "http"))),
            ("https", lambda: servers.start_http(os.path.join(tmp, "https"), tls=True)),
            ("sftp", lambda: servers.start_sftp(os.path.join(tmp, "sftp"),
                                                os.path.join(tmp, "known_hosts"))),
        ]
        for name, start in starters:
            if name in ("local", "http", "https", "sftp"):
                os.makedirs(os.path.join(tmp, name), exist_ok=True)
            try:
                server = start()
            except servers.Unavailable as err:
                print(f"{name:10s} skipped: {err}")
                continue
            try:
                rate = _measure(server, args.mib << 20, tmp)
                print(f"{name:10s} {rate:8.0f} MiB/s  ({args.mib} MiB, best of 3)")
            finally:
                server.stop()


if __name__ == "__main__":
    main()
