"""`Sink`: background uploads, local clean-up, failure reporting; the writer sends its index last."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streaming import MDSWriter
from streaming.storage import open_store
from streaming.storage.sink import Sink, SinkError, open_sink
from streaming.storage.transfer import TransferError
from tests.storage import recording
from tests.storage.servers import Server


@pytest.fixture(autouse=True)
def clean_recording() -> Iterator[None]:
    recording.reset()
    yield
    recording.reset()


def _write(directory: Any, name: str, data: bytes) -> str:
    path = os.path.join(str(directory), name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_uploads_run_in_background_and_delete_locals(tmp_path: Any) -> None:
    gate = threading.Event()
    recording.GATES.update({"shard.00000.mds": gate, "shard.00001.mds": gate})
    sink = Sink(str(tmp_path), "recording://sink-a/out", keep_local=False, max_workers=2)
    for i in range(2):
        sink.put(_write(tmp_path, f"shard.0000{i}.mds", b"x" * 10), f"shard.0000{i}.mds")
    assert recording.EVENTS == []  # put returned while both uploads were still held back
    gate.set()
    sink.finish()
    assert sorted(recording.EVENTS) == ["shard.00000.mds", "shard.00001.mds"]
    assert os.listdir(tmp_path) == []
    store = open_store("recording://sink-a/out")
    assert store.list() == ["shard.00000.mds", "shard.00001.mds"]


def test_the_writer_sends_its_index_after_every_shard(tmp_path: Any) -> None:
    recording.DELAYS["shard.00000.mds"] = 0.4  # slowest file handed over first
    seen: list[int] = []
    with MDSWriter(columns={"v": "int"}, out=(str(tmp_path / "local"), "recording://sink-b"),
                   keep_local=True, max_workers=4, size_limit=64) as writer:
        writer.cloud_writer.progress = seen.append
        for i in range(20):
            writer.write({"v": i})
    assert recording.EVENTS[-1] == "index.json"
    assert "shard.00000.mds" in recording.EVENTS and len(recording.EVENTS) > 3
    assert sum(seen) == sum(os.path.getsize(tmp_path / "local" / name)
                            for name in os.listdir(tmp_path / "local"))


def test_failed_upload_raises_reference_error(tmp_path: Any) -> None:
    recording.FAILURES["shard.00001.mds"] = ConnectionResetError
    sink = Sink(str(tmp_path), "recording://sink-c", retry=2)
    sink.put(_write(tmp_path, "shard.00000.mds", b"a"), "shard.00000.mds")
    sink.put(_write(tmp_path, "shard.00001.mds", b"b"), "shard.00001.mds")
    with pytest.raises(Exception, match="One of the threads failed") as info:
        sink.finish()
    assert isinstance(info.value, SinkError)
    assert isinstance(info.value.__cause__, TransferError)  # names the URL and the attempts
    assert "recording://sink-c/shard.00001.mds failed after 2 attempts" in str(info.value.__cause__)
    assert isinstance(info.value.__cause__.__cause__, ConnectionResetError)
    assert sink.failed
    # two attempts, the first with its free reconnect after a reset (`call_with_retries`)
    assert recording.ATTEMPTS["shard.00001.mds"] == 3
    assert os.path.exists(tmp_path / "shard.00001.mds")  # a failed file keeps its local copy


def test_denied_upload_is_not_retried(tmp_path: Any) -> None:
    recording.FAILURES["shard.00000.mds"] = PermissionError
    sink = Sink(str(tmp_path), "recording://sink-d", retry=5)
    sink.put(_write(tmp_path, "shard.00000.mds", b"a"), "shard.00000.mds")
    with pytest.raises(SinkError):
        sink.wait()
    assert recording.ATTEMPTS["shard.00000.mds"] == 1
    sink.abort()


def test_unknown_scheme_is_the_reference_error(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"Invalid Cloud provider prefix: nosuch\."):
        Sink(str(tmp_path), "nosuch://bucket/x")


def test_read_only_store_is_refused(tmp_path: Any, http_server: Server) -> None:
    with pytest.raises(ValueError, match="read-only"):
        Sink(str(tmp_path), http_server.fresh_url())


def test_open_sink_uses_remote_sink_against_s3(moto_server: Server, tmp_path: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    root = moto_server.fresh_url()
    monkeypatch.setenv("S3_ENDPOINT_URL", moto_server.endpoint)  # the reference's variable
    local, sink = open_sink((str(tmp_path / "local"), root), keep_local=False, max_workers=2)
    assert isinstance(sink, Sink) and sink.remote == root
    for i in range(3):
        sink.put(_write(local, f"shard.{i:05}.mds", bytes([i]) * 1000), f"shard.{i:05}.mds")
    sink.wait()
    sink.put(_write(local, "index.json", b'{"version": 2}'), "index.json")
    sink.finish()
    store = open_store(root, **moto_server.options)
    assert store.list() == ["index.json", "shard.00000.mds", "shard.00001.mds",
                            "shard.00002.mds"]
    assert store.get("shard.00002.mds") == b"\x02" * 1000
    assert os.listdir(local) == []


def test_canned_acl_is_sent_on_upload(moto_server: Server, tmp_path: Any,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3_CANNED_ACL", "public-read")
    root = moto_server.fresh_url()
    sink = Sink(str(tmp_path), root, keep_local=True, **moto_server.options)
    sink.put(_write(tmp_path, "a.bin", b"a"), "a.bin")
    sink.finish()
    key = root.split("/", 3)[3] + "/a.bin"
    grants = moto_server.extra["boto"].get_object_acl(Bucket="shardstream", Key=key)["Grants"]
    assert any(g["Grantee"].get("URI", "").endswith("AllUsers") for g in grants)


@pytest.mark.parametrize("max_workers", [0, -1])
@pytest.mark.parametrize("with_remote", [False, True])
def test_no_transfer_threads_is_refused_when_the_writer_is_made(
        tmp_path: Path, max_workers: int, with_remote: bool) -> None:
    """As the reference's thread pool refuses it, remote or not, before any file exists."""
    out = (str(tmp_path / "local"), str(tmp_path / "remote")) if with_remote else str(
        tmp_path / "local")
    with pytest.raises(ValueError, match="max_workers must be greater than 0"):
        MDSWriter(out=out, columns={"x": "int"}, max_workers=max_workers)
    assert not (tmp_path / "local").exists()


def test_a_failed_put_cancels_the_queue_instead_of_waiting_out_every_upload(
        tmp_path: Any) -> None:
    """A remote that stops answering: the writer's wait raises at the first failure, the
    uploads not started yet are cancelled, and none still running is waited for."""
    gate = threading.Event()
    recording.FAILURES["shard.00000.mds"] = PermissionError
    recording.GATES["shard.00001.mds"] = gate  # an upload that hangs
    sink = Sink(str(tmp_path), "recording://sink-q", retry=1, max_workers=2)
    for i in range(10):
        sink.put(_write(tmp_path, f"shard.{i:05d}.mds", b"x"), f"shard.{i:05d}.mds")
    releaser = threading.Timer(60, gate.set)  # only if the wait hangs on the held upload
    releaser.start()
    try:
        with pytest.raises(SinkError) as info:
            sink.wait()
        assert not gate.is_set()  # raised while shard 1 still hung
        assert isinstance(info.value.__cause__, PermissionError)
    finally:
        gate.set()
        releaser.cancel()
        sink.abort()
    assert not any(f"shard.{i:05d}.mds" in recording.ATTEMPTS for i in range(2, 10))


def test_the_writers_sink_error_names_its_cause(tmp_path: Any) -> None:
    recording.FAILURES["shard.00000.mds"] = PermissionError
    with pytest.raises(SinkError) as info:
        with MDSWriter(columns={"v": "int"}, out=(str(tmp_path / "l"), "recording://sink-w"),
                       size_limit=64, retry=1) as writer:
            for i in range(10_000):
                writer.write({"v": i})
    assert isinstance(info.value.__cause__, PermissionError)
