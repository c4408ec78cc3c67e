"""Faults a user met against real servers: a server restarting under a download, a writer given
wrong credentials or a missing GCS bucket, a remote shard changed in place read by `head`."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest
from click.testing import CliRunner

from streaming import MDSWriter, StreamingDataset
from streaming.cli.app import cli
from streaming.errors import RemoteUnreachableError
from streaming.storage import open_store
from streaming.storage.base import AccessDeniedError, ObjectNotFoundError
from streaming.storage.transfer import TransferTimeoutError, call_with_retries
from tests.storage.sample_data import publish, write_local
from tests.storage.servers import QuietHTTPServer, RangeHandler, Server


@pytest.mark.parametrize("refusal", [ConnectionRefusedError("refused"),
                                     RemoteUnreachableError("Could not connect")])
def test_a_refused_connection_waits_before_its_retry(refusal: Exception) -> None:
    """A server down for a moment (a restart) refuses connections: retried at once, both
    default attempts fell inside a half-second outage that the reference rode out."""
    calls: list[float] = []

    def attempt() -> str:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise refusal
        return "ok"

    assert call_with_retries(attempt, retries=2, backoff=0.3, max_jitter=0) == ("ok", 2)
    assert calls[1] - calls[0] >= 0.3


def test_a_writer_with_a_wrong_secret_fails_at_once_naming_the_reason(
        seaweed_server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    seaweed_server.apply_env(monkeypatch)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    url = seaweed_server.fresh_url()
    with pytest.raises(AccessDeniedError, match=rf"Access denied to {url}: "
                                                r"SignatureDoesNotMatch: The request signature"):
        MDSWriter(out=url, columns={"v": "int"})


def test_a_malformed_azure_key_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key that is not base64 can never sign a request: access denied on the first attempt,
    naming the reason, where it used to be retried as an unknown error. No server is needed:
    the client fails before it connects (the endpoint is a closed port)."""
    monkeypatch.setenv("AZURE_ACCOUNT_ACCESS_KEY", "not base64!!")
    monkeypatch.setenv("AZURE_STORAGE_ENDPOINT", "http://127.0.0.1:1/devstoreaccount1")
    store = open_store("azure://devstoreaccount1/container/ds")
    with pytest.raises(AccessDeniedError, match=r"Access denied to azure://devstoreaccount1/"
                                                r"container/ds/index.json: .*Invalid Access Key"):
        store.get("index.json")


def test_a_writer_to_a_missing_gcs_bucket_fails_before_any_work(gcs_server: Server,
                                                                 tmp_path: Any) -> None:
    store = open_store("gs://no-such-bucket-zz/ds", **gcs_server.options)
    with pytest.raises(ObjectNotFoundError, match=r"The bucket of gs://no-such-bucket-zz/ds "
                                                  "does not exist"):
        store.check_container()
    open_store(gcs_server.fresh_url(), **gcs_server.options).check_container()  # exists: passes


def test_head_never_prints_a_remote_shard_that_fails_its_digest(http_server: Server) -> None:
    remote = publish(http_server, 120, compression=None)
    root = os.path.join(http_server.extra["httpd"].root, "data", remote.rsplit("/", 1)[1])
    path = os.path.join(root, "shard.00001.mds")
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0x40  # same size, still parses: only the digest can tell
    open(path, "wb").write(bytes(data))
    good = CliRunner().invoke(cli, ["head", remote, "-n", "3"])
    assert good.exit_code == 0, good.output
    bad = CliRunner().invoke(cli, ["head", remote, "-n", "120"])
    assert bad.exit_code == 1 and "Checksum failure" in bad.output, bad.output
    assert '"id": 119' not in bad.output


class _StallShards(RangeHandler):
    """Serves the index; answers a whole-shard GET with ten bytes, then nothing until `wake`."""

    wake = threading.Event()
    whole_gets: dict[str, int] = {}

    def _serve(self, body: bool) -> None:
        name = self.path.rsplit("/", 1)[-1]
        if ".mds" in name and body and not self.headers.get("Range"):
            self.whole_gets[name] = self.whole_gets.get(name, 0) + 1
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.wfile.flush()
            self.wake.wait(120)
            return
        super()._serve(body)


def test_a_shard_whose_prefetch_gave_up_is_not_fetched_all_over_again(tmp_path: Any) -> None:
    """The prefetch thread made the `download_retry` attempts while the reader waited for it;
    the reader then made them all again: twice the time before a dead shard was reported."""
    root = tmp_path / "root"
    write_local(str(root / "data"), 120, compression=None)
    httpd = QuietHTTPServer(("127.0.0.1", 0), _StallShards)
    httpd.root = str(root)  # type: ignore[attr-defined]
    httpd.requests = 0  # type: ignore[attr-defined]
    _StallShards.whole_gets.clear()
    _StallShards.wake.clear()
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/data"
        with StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=1,
                              download_timeout=1, download_retry=2) as dataset:
            with pytest.raises(TransferTimeoutError, match="shard.00000.mds failed after 2 "
                                                           "attempts"):
                list(dataset)
        assert _StallShards.whole_gets["shard.00000.mds"] == 2
    finally:
        _StallShards.wake.set()
        httpd.shutdown()
        httpd.server_close()


def test_no_sample_of_a_shard_that_fails_its_digest_is_yielded_first(tmp_path: Any) -> None:
    """Early reads served the first batch from ranged reads of a shard whose download then
    failed its index digest: a loader that took one batch trained on it without an error."""
    from streaming.errors import HashMismatchError

    remote = str(tmp_path / "remote")
    write_local(remote, 120, compression=None, hashes=("xxh64",))
    path = os.path.join(remote, "shard.00000.mds")
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0x40  # same size, still parses
    open(path, "wb").write(bytes(data))
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=8) as ds:
        with pytest.raises(HashMismatchError, match="Checksum failure"):
            next(iter(ds))
