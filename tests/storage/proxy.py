"""A tiny fault-injecting TCP proxy on 127.0.0.1 for transfer tests.

Sits between a store and its real server and, per accepted connection, applies the next queued
`Fault` (or passes bytes through): refuse the connection, cut it after N response bytes, add
latency per chunk, throttle to a byte rate (server-to-client, or `throttle_up`: client-to-server,
as a slow uplink under an upload), or stall. A `link` fault stands for a node's network
link instead: every connection under it shares one byte rate (chunks go out in turn, so
concurrent transfers split the rate), and each request's first response byte waits `delay`
seconds after the request. It only ever connects to the upstream address it was given (a
loopback server of the test session) and stops with `stop()`.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Fault:
    """What to do to one connection's server-to-client bytes (`throttle_up`: the other way)."""

    kind: str = "pass"  # pass | refuse | drop | reset | latency | throttle | throttle_up | stall
    # | wait (a live but slow server: holds the response `delay` seconds before its first byte)
    #                     | link
    after_bytes: int = 0  # drop/reset/stall: bytes forwarded before the fault
    delay: float = 0.0  # latency: seconds per chunk; stall: seconds to hold; link: per request
    rate: float = 0.0  # throttle: bytes per second (per connection); link: shared by all


class FaultProxy:
    """Forward 127.0.0.1:<port> to `upstream`, injecting queued faults."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        if upstream[0] not in ("127.0.0.1", "localhost"):
            raise ValueError("the proxy only forwards to loopback servers")
        self.upstream = upstream
        self.connections = 0
        self.bytes_down = 0  # server-to-client bytes forwarded (headers included)
        self.default = Fault()
        self._queue: list[Fault] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._link_free = 0.0  # when the shared link (`link` faults) can send its next chunk
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def queue(self, *faults: Fault) -> None:
        """Apply these faults to the next connections, in order; then `default`."""
        with self._lock:
            self._queue.extend(faults)

    def reset(self, default: Fault | None = None) -> None:
        with self._lock:
            self._queue.clear()
            self.default = default or Fault()
            self.connections = 0

    def drop_all(self) -> None:
        """Cut every open connection now (as a dying server would); new ones get the faults."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _close(sock)

    def _next_fault(self) -> Fault:
        with self._lock:
            self.connections += 1
            return self._queue.pop(0) if self._queue else self.default

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            fault = self._next_fault()
            if fault.kind == "refuse":
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()  # RST: the client sees a reset connection
                continue
            threading.Thread(target=self._serve, args=(client, fault), daemon=True).start()

    def _serve(self, client: socket.socket, fault: Fault) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            client.close()
            return
        with self._lock:
            self._sockets += [client, server]
        requests = [0.0, False]  # the last request's time, whether its answer has begun
        up_fault, down_fault = Fault(), fault
        if fault.kind == "throttle_up":
            up_fault, down_fault = Fault("throttle", rate=fault.rate), Fault()
        up = threading.Thread(target=self._pump, args=(client, server, up_fault, False,
                                                       requests), daemon=True)
        up.start()
        self._pump(server, client, down_fault, True, requests)
        for sock in (client, server):
            _close(sock)

    def _pump(self, src: socket.socket, dst: socket.socket, fault: Fault, down: bool,
              requests: list | None = None) -> None:
        sent = 0
        started = time.monotonic()
        try:
            while not self._closing.is_set():
                data = src.recv(_CHUNK)
                if not data:
                    break
                if not down and requests is not None:  # a request (or more of it) went up
                    requests[0], requests[1] = time.monotonic(), False
                if fault.kind == "link":
                    self._pace_link(data, fault, requests)
                if (fault.kind in ("drop", "reset", "stall")
                        and sent + len(data) > fault.after_bytes):
                    dst.sendall(data[: max(0, fault.after_bytes - sent)])
                    if down:
                        with self._lock:
                            self.bytes_down += max(0, fault.after_bytes - sent)
                    if fault.kind == "stall":
                        self._closing.wait(fault.delay)
                    if fault.kind == "reset":  # RST instead of FIN: ECONNRESET mid-body
                        dst.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
                        # Unblock the other pump's recv on this socket (SHUT_RD sends nothing
                        # to the peer), so the close below really ends the connection with a
                        # RST instead of leaving it open while that recv holds it.
                        dst.shutdown(socket.SHUT_RD)
                        dst.close()
                    break
                if fault.kind == "latency" or (fault.kind == "wait" and down and not sent):
                    time.sleep(fault.delay)
                if fault.kind == "throttle":
                    ahead = (sent + len(data)) / fault.rate - (time.monotonic() - started)
                    if ahead > 0:
                        time.sleep(ahead)
                dst.sendall(data)
                sent += len(data)
                if down:
                    with self._lock:
                        self.bytes_down += len(data)
        except OSError:
            pass
        finally:
            _close(dst)
            _close(src)

    def _pace_link(self, data: bytes, fault: Fault, requests: list | None) -> None:
        """Hold a response chunk until the shared link has sent it (after the request's
        latency, for its first chunk)."""
        ready = time.monotonic()
        if requests is not None and not requests[1]:
            ready = max(ready, requests[0] + fault.delay)
            requests[1] = True
        with self._lock:
            begin = max(ready, self._link_free)
            self._link_free = begin + len(data) / fault.rate
            until = self._link_free
        pause = until - time.monotonic()
        if pause > 0:
            time.sleep(pause)

    def stop(self) -> None:
        self._closing.set()
        _close(self._listener)
        with self._lock:
            for sock in self._sockets:
                _close(sock)
        self._thread.join(5)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
