"""A loopback HTTP server behind the fault proxy's `link`, in a process of its own.

`python -m tests.simulate.link_server ROOT` serves ROOT/data and prints the proxy's URL of it;
then each line on stdin sets the link: `RATE DELAY` (bytes/s, seconds) or `0 0` for none,
answered by `ok`. It stops when stdin closes. A reader in the parent process then never shares
an interpreter lock with the server or the pacing threads (it would with `workers=0`).
"""

from __future__ import annotations

import sys

from tests.storage.proxy import Fault, FaultProxy
from tests.storage.servers import start_http


def main() -> None:
    server = start_http(sys.argv[1])
    proxy = FaultProxy(server.host_port)
    port = server.host_port[1]
    print(f"{server.base_url.replace(f':{port}/', f':{proxy.port}/')}", flush=True)
    try:
        for line in sys.stdin:
            rate, delay = (float(v) for v in line.split())
            proxy.reset(Fault("link", rate=rate, delay=delay) if rate else None)
            print("ok", flush=True)
    finally:
        proxy.stop()
        server.stop()


if __name__ == "__main__":
    main()
