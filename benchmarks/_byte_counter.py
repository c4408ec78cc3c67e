"""A byte-counting TCP relay on 127.0.0.1: how many bytes a client pulled from a server.

Egress is measured the same way for every library: each one talks to S3 through this relay, which
counts server-to-client bytes (HTTP headers included). On Linux the bytes move with `os.splice`
through a pipe, never through Python buffers, so the relay costs little throughput. It only
connects to the loopback upstream it was given and stops with `stop()`.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable

_CHUNK = 1 << 20


class ByteCounter:
    """Relay 127.0.0.1:<port> to `upstream`; `downstream_bytes` counts server-to-client bytes."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        if upstream[0] not in ("127.0.0.1", "localhost"):
            raise ValueError("the relay only forwards to loopback servers")
        self.upstream = upstream
        self.downstream_bytes = 0
        self.active = 0  # open client connections
        self._lock = threading.Lock()
        self._closing = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept_loop, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def settle(self, timeout: float = 10.0) -> int:
        """Wait until every connection has closed (a client that exited), then the count."""
        deadline = time.monotonic() + timeout
        while self.active and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.downstream_bytes

    def _add(self, nbytes: int) -> None:
        with self._lock:
            self.downstream_bytes += nbytes

    def _accept_loop(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=30)
        except OSError:
            client.close()
            return
        for sock in (client, server):
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self.active += 1
        up = threading.Thread(target=self._pump, args=(client, server, None), daemon=True)
        up.start()
        self._pump(server, client, self._add)
        up.join(5)
        with self._lock:
            self.active -= 1

    def _pump(self, src: socket.socket, dst: socket.socket,
              count: Callable[[int], None] | None) -> None:
        try:
            if hasattr(os, "splice"):
                _splice_all(src, dst, count)
            else:  # pragma: no cover (not Linux)
                while data := src.recv(_CHUNK):
                    dst.sendall(data)
                    if count:
                        count(len(data))
        except OSError:
            pass
        finally:
            for sock in (dst, src):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def stop(self) -> None:
        self._closing = True
        self._listener.close()


def _splice_all(src: socket.socket, dst: socket.socket,
                count: Callable[[int], None] | None) -> None:
    """Move bytes from `src` to `dst` through a kernel pipe until `src` closes."""
    read_end, write_end = os.pipe()
    try:
        while True:
            n = os.splice(src.fileno(), write_end, _CHUNK)
            if n == 0:
                return
            left = n
            while left:
                left -= os.splice(read_end, dst.fileno(), left)
            if count:
                count(n)
    finally:
        os.close(read_end)
        os.close(write_end)
