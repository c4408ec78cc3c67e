"""`transfer.fetch` / `push` under real network faults (tests/storage/proxy.py) and bad data.

The invariant checked everywhere: after `fetch` returns or raises, the target is either the
complete, verified file or absent, and no temp file is left beside it.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from streaming.coord.wait import wait_until
from streaming.errors import HashMismatchError
from streaming.storage import Store, fetch, open_store, push
from streaming.storage.transfer import (
    IncompleteTransferError,
    TransferError,
    TransferTimeoutError,
    call_with_retries,
    is_retryable,
    read,
)
from tests.storage.doubles import CountingStore
from tests.storage.proxy import Fault, FaultProxy
from tests.storage.servers import Server

DATA = random.Random(7).randbytes(3 << 20)


@pytest.fixture(params=["http", "moto"])
def upstream(request: pytest.FixtureRequest) -> Server:
    return request.getfixturevalue(f"{request.param}_server")


@pytest.fixture
def faulty(upstream: Server) -> Iterator[tuple[Store, FaultProxy]]:
    """A store that reaches `upstream` through a fresh fault proxy, with one 3 MiB object."""
    root = upstream.fresh_url()
    upstream.seed(f"{root}/obj.bin", DATA)
    proxy = FaultProxy(upstream.host_port)
    options = dict(upstream.options, read_timeout=1.5)
    if upstream.name == "http":
        url = root.replace(f":{upstream.host_port[1]}/", f":{proxy.port}/")
    else:
        url = root
        options["endpoint"] = f"http://127.0.0.1:{proxy.port}"
    try:
        yield open_store(url, **options), proxy
    finally:
        proxy.stop()


def _only(directory: Any) -> list[str]:
    return sorted(os.listdir(directory))


def test_drop_mid_body_is_retried(faulty: tuple[Store, FaultProxy], tmp_path: Any) -> None:
    store, proxy = faulty
    proxy.queue(Fault("drop", after_bytes=500_000))
    result = fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=3, timeout=20,
                   backoff=0.01)
    assert result.attempts == 1  # reconnected at once, without using up an attempt
    assert proxy.connections >= 2
    assert (tmp_path / "obj.bin").read_bytes() == DATA
    assert _only(tmp_path) == ["obj.bin"]


def test_refused_connection_is_retried(faulty: tuple[Store, FaultProxy], tmp_path: Any) -> None:
    store, proxy = faulty
    proxy.queue(Fault("refuse"))
    result = fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=2, timeout=20,
                   backoff=0.01)
    # The proxy refuses by closing at once: the client sees a refusal (an attempt) or a reset
    # (a free reconnect), whichever the race gives; either way a second connection got it.
    assert proxy.connections >= 2 and result.attempts <= 2
    assert (tmp_path / "obj.bin").read_bytes() == DATA


def test_persistent_failure_leaves_nothing(faulty: tuple[Store, FaultProxy],
                                           tmp_path: Any) -> None:
    store, proxy = faulty
    proxy.reset(default=Fault("drop", after_bytes=500_000))
    with pytest.raises(Exception) as info:
        fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=3, timeout=20, backoff=0.01)
    assert is_retryable(info.value)
    assert proxy.connections >= 3
    assert _only(tmp_path) == []


def test_slow_transfer_hits_the_per_attempt_timeout(faulty: tuple[Store, FaultProxy],
                                                    tmp_path: Any) -> None:
    store, proxy = faulty
    proxy.reset(default=Fault("throttle", rate=4 << 20))  # 3 MiB at 4 MiB/s: ~0.75 s
    with pytest.raises(TimeoutError):
        fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=1, timeout=0.3)
    assert _only(tmp_path) == []
    result = fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=1, timeout=20)
    assert result.seconds > 0.5 and (tmp_path / "obj.bin").read_bytes() == DATA


def test_stall_is_cut_by_the_attempt_timeout_not_the_read_timeout(
        upstream: Server, tmp_path: Any) -> None:
    """A server that stops sending mid-body costs one attempt's `timeout`, not the client's
    (much longer) read timeout, and the final error names the URL."""
    root = upstream.fresh_url()
    upstream.seed(f"{root}/obj.bin", DATA)
    proxy = FaultProxy(upstream.host_port)
    try:
        options = dict(upstream.options, read_timeout=60)
        if upstream.name == "http":
            url = root.replace(f":{upstream.host_port[1]}/", f":{proxy.port}/")
        else:
            url, options["endpoint"] = root, f"http://127.0.0.1:{proxy.port}"
        store = open_store(url, **options)
        proxy.reset(default=Fault("stall", after_bytes=100_000, delay=30))
        started = time.monotonic()
        with pytest.raises(TransferTimeoutError, match=r"obj\.bin failed after 2 attempts"):
            fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=2, timeout=0.5,
                  backoff=0.01)
        assert time.monotonic() - started < 20  # not the 30 s stall nor the 60 s read timeout
        with pytest.raises(TransferTimeoutError, match=r"Reading .*obj\.bin"):
            read(store, "obj.bin", retries=1, timeout=0.5)
        # The abandoned attempts clean up after themselves, in their own time.
        wait_until(lambda: _only(tmp_path) == [] or None, timeout=30,
                   what=lambda: f"abandoned attempts to remove {_only(tmp_path)}")
        proxy.reset()
        proxy.drop_all()
        assert read(store, "obj.bin", retries=2, timeout=20, backoff=0.01) == DATA
    finally:
        proxy.stop()


def test_stalled_response_fails_by_read_timeout(faulty: tuple[Store, FaultProxy],
                                                tmp_path: Any) -> None:
    store, proxy = faulty
    proxy.queue(Fault("stall", after_bytes=100_000, delay=30))
    result = fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=2, timeout=20,
                   backoff=0.01)
    assert result.attempts == 2 and 1.2 < result.seconds < 15
    assert (tmp_path / "obj.bin").read_bytes() == DATA


def test_a_slow_but_live_server_gets_a_patient_second_attempt(faulty: tuple[Store, FaultProxy],
                                                             tmp_path: Any) -> None:
    """A server that takes longer than the stall timeout (1.5 s here) to begin answering is
    alive: the attempt after the stalled one waits for it (`storage.patience`), as the
    reference's clients waited up to 60 s. Every attempt failed before."""
    store, proxy = faulty
    proxy.reset(default=Fault("wait", delay=2.5))
    result = fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=2, timeout=30,
                   backoff=0.01)
    assert result.attempts == 2 and (tmp_path / "obj.bin").read_bytes() == DATA
    assert read(store, "obj.bin", retries=2, timeout=30, backoff=0.01) == DATA
    with pytest.raises(TransferTimeoutError, match="stall timeout"):  # one attempt: no patience
        fetch(store, "obj.bin", str(tmp_path / "again.bin"), retries=1, timeout=30)


def test_the_patient_attempt_reaches_a_forked_workers_helper(faulty: tuple[Store, FaultProxy],
                                                              tmp_path: Any) -> None:
    """A DataLoader worker forked after its parent used obstore calls it through a helper
    process (`storage._forksafe`): the patience of its second attempt goes along (the helper
    kept the stall timeout, and every attempt failed)."""
    from tests.storage.test_storage_forksafe import _in_forked_child

    store, proxy = faulty
    assert store.size("obj.bin") == len(DATA)  # the parent's obstore runtime is running
    proxy.reset(default=Fault("wait", delay=2.5))
    target = str(tmp_path / "obj.bin")
    attempts = _in_forked_child(lambda: fetch(store, "obj.bin", target, retries=2, timeout=30,
                                              backoff=0.01).attempts, timeout=120)
    assert attempts == 2 and open(target, "rb").read() == DATA


@pytest.mark.parametrize("size", [0, 700_000, 2_500_000, 6_000_000])
def test_parallel_parts_pull_no_extra_bytes(moto_server: Server, tmp_path: Any,
                                            size: int) -> None:
    """Parts download over several connections, yet the wire carries the object once: the first
    GET asks for one part only (a whole-object GET dropped early over-reads into buffers)."""
    root = moto_server.fresh_url()
    data = (DATA * 2)[:size]
    moto_server.seed(f"{root}/obj.bin", data)
    proxy = FaultProxy(moto_server.host_port)
    try:
        store = open_store(root, **dict(moto_server.options,
                                        endpoint=f"http://127.0.0.1:{proxy.port}",
                                        parallel_threshold=2_000_000, part_size=1 << 20))
        result = fetch(store, "obj.bin", str(tmp_path / "obj.bin"), retries=1, timeout=30)
        assert result.bytes == size and (tmp_path / "obj.bin").read_bytes() == data
        # The proxy's threads count the last bytes a moment after the client has them.
        wait_until(lambda: proxy.bytes_down >= size or None, timeout=30,
                   what=lambda: f"the proxy to count {size} bytes (has {proxy.bytes_down})")
        parts = max(1, -(-size // (1 << 20)))
        assert size <= proxy.bytes_down <= size + 2_000 * parts  # + response headers
    finally:
        proxy.stop()


def test_hash_mismatch_is_not_retried(local_server: Server, tmp_path: Any) -> None:
    root = local_server.fresh_url()
    local_server.seed(f"{root}/x.bin", b"hello")
    store = CountingStore(open_store(root))
    target = str(tmp_path / "x.bin")
    with pytest.raises(HashMismatchError, match=f"Checksum failure: {target}") as err:
        fetch(store, "x.bin", target, retries=3, hash_algo="md5", expected_hash="0" * 32,
              backoff=0)
    assert f"expected {'0' * 32})" in str(err.value) and "index" not in str(err.value)
    assert store.downloads == 1 and _only(tmp_path) == []
    result = fetch(store, "x.bin", target, retries=1, hash_algo="md5",
                   expected_hash=hashlib.md5(b"hello").hexdigest(), expected_size=5)
    assert result.bytes == 5 and open(target, "rb").read() == b"hello"


def test_size_mismatch_is_retried_then_fails(local_server: Server, tmp_path: Any) -> None:
    root = local_server.fresh_url()
    local_server.seed(f"{root}/x.bin", b"hello")
    store = CountingStore(open_store(root))
    with pytest.raises(TransferError, match=r"x\.bin failed after 2 attempts: .*expected 6") as info:
        fetch(store, "x.bin", str(tmp_path / "x.bin"), retries=2, expected_size=6, backoff=0)
    assert isinstance(info.value.__cause__, IncompleteTransferError)
    assert store.downloads == 2 and _only(tmp_path) == []


def test_existing_target_is_replaced_only_on_success(local_server: Server,
                                                     tmp_path: Any) -> None:
    root = local_server.fresh_url()
    local_server.seed(f"{root}/x.bin", b"new")
    target = tmp_path / "x.bin"
    target.write_bytes(b"old")
    with pytest.raises(FileNotFoundError):
        fetch(open_store(root), "missing", str(target), retries=2)
    assert target.read_bytes() == b"old"
    fetch(open_store(root), "x.bin", str(target), retries=1)
    assert target.read_bytes() == b"new"


def test_zero_attempts_is_the_reference_error(local_server: Server, tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"^num_attempts must be at-least 1: `retries` counts "
                                         r"the attempts \(1 tries once, without retrying\), "
                                         r"got 0\.$"):
        fetch(open_store(local_server.base_url), "x", str(tmp_path / "x"), retries=0)


def test_a_brief_outage_of_resets_is_ridden_out() -> None:
    """A load balancer with no healthy backend resets every connection for a moment: the first
    reset reconnects at once for free, the next waits the backoff, so the two default attempts
    no longer both fall inside the outage (the reference's boto3 retried on its own)."""
    import time

    start = time.monotonic()

    def outage() -> str:
        if time.monotonic() - start < 0.3:
            raise ConnectionResetError("reset by the balancer")
        return "ok"

    assert call_with_retries(outage, retries=2, backoff=0.5, max_jitter=0)[0] == "ok"


def test_call_with_retries_counts_and_stops_on_fatal() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionResetError("boom")
        return "ok"

    # a reset: one free reconnect, then counted attempts
    assert call_with_retries(flaky, retries=2, backoff=0, max_jitter=0) == ("ok", 2)
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(TransferError, match="failed after 1 attempt:"):
        call_with_retries(flaky, retries=1, backoff=0)  # one attempt: nothing tried twice
    assert len(calls) == 1
    calls.clear()

    def denied() -> None:
        calls.append(1)
        raise PermissionError("no")

    with pytest.raises(PermissionError):
        call_with_retries(denied, retries=5, backoff=0)
    assert len(calls) == 1


def test_push_uploads_and_reports(moto_server: Server, tmp_path: Any) -> None:
    store = open_store(moto_server.fresh_url(), **moto_server.options)
    local = tmp_path / "f.bin"
    local.write_bytes(DATA[:1000])
    result = push(store, str(local), "sub/f.bin", retries=2)
    assert result.bytes == 1000 and result.attempts == 1
    assert store.get("sub/f.bin") == DATA[:1000]
    with pytest.raises(FileNotFoundError):
        push(store, str(tmp_path / "absent"), "x", retries=3)


@pytest.fixture(params=["moto", "azurite"])
def bucket_server(request: pytest.FixtureRequest) -> Server:
    """A server of each obstore-backed store that takes uploads."""
    return request.getfixturevalue(f"{request.param}_server")


def _through(proxy: FaultProxy, server: Server, **options: Any) -> Store:
    """A store of a fresh folder of `server` whose requests go through `proxy`."""
    endpoint = server.options["endpoint"].replace(f":{server.host_port[1]}", f":{proxy.port}")
    return open_store(server.fresh_url(), **dict(server.options, endpoint=endpoint, **options))


@pytest.mark.parametrize("size", [1 << 20, 6 << 20], ids=["one-request", "multipart"])
def test_a_slow_uplink_is_not_taken_for_a_stall(bucket_server: Server, tmp_path: Any,
                                                size: int) -> None:
    """An upload whose body takes several stall timeouts to send still lands, in one attempt.

    The HTTP client's read timeout also runs while a request body is being written (nothing
    is read then), so it used to cut every part that took longer than the stall timeout to
    send: on an uplink slower than about 12 MiB/s every part of every upload failed, each retry
    as well.
    """
    proxy = FaultProxy(bucket_server.host_port)
    try:
        proxy.reset(Fault("throttle_up", rate=size / 2.5))  # about 2.5 s per upload
        store = _through(proxy, bucket_server, read_timeout=0.5)
        local = tmp_path / "f.bin"
        data = random.Random(size).randbytes(size)
        local.write_bytes(data)
        result = push(store, str(local), "f.bin", retries=1)
        assert result.attempts == 1
    finally:
        proxy.stop()
    check = open_store(store.url, **bucket_server.options)
    assert check.get("f.bin") == data


def test_an_upload_with_no_answer_is_cut_by_the_upload_timeout(bucket_server: Server,
                                                               tmp_path: Any) -> None:
    """A server that takes the body and never answers fails the upload after `upload_timeout`
    (not never), with an error that names the setting."""
    proxy = FaultProxy(bucket_server.host_port)
    try:
        proxy.reset(Fault("stall", after_bytes=0, delay=60))
        store = _through(proxy, bucket_server, upload_timeout=0.5)
        local = tmp_path / "f.bin"
        local.write_bytes(DATA[:1000])
        started = time.monotonic()
        with pytest.raises(TransferError) as caught:
            push(store, str(local), "f.bin", retries=1)
        assert time.monotonic() - started < 30
    finally:
        proxy.stop()
    assert "upload_timeout" in str(caught.value) and "STREAMING_UPLOAD_TIMEOUT" in str(
        caught.value)
    with pytest.raises(ValueError, match="upload_timeout must be positive"):
        open_store(bucket_server.fresh_url(), **dict(bucket_server.options, upload_timeout=0))


@pytest.mark.parametrize("can_stall", [True, False])
def test_only_stores_that_can_stall_download_in_a_helper_thread(tmp_path: Any,
                                                                 can_stall: bool) -> None:
    """A socket can block for ever, so its download runs where it can be abandoned at the
    timeout; a local disk read runs in the caller (a thread start per tiny file was most of
    the cost of a cold epoch over 5,000 local shards)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"x" * 10)
    store = CountingStore(open_store(str(tmp_path / "src")))
    store.can_stall = can_stall  # type: ignore[misc]
    fetch(store, "f", str(tmp_path / "f"), timeout=30)
    assert (tmp_path / "f").read_bytes() == b"x" * 10
    in_caller = store.download_threads == [threading.current_thread().name]
    assert in_caller is not can_stall
    assert open_store(str(tmp_path)).can_stall is False  # what the real local store declares


def test_an_object_larger_than_expected_stops_at_once_and_is_not_retried(tmp_path: Any) -> None:
    """A server sending 2 GiB for a shard whose index gives 2 KB was read to the end, twice."""
    from streaming.storage.memory import MemoryStore
    from streaming.storage.transfer import OversizedObjectError

    class Chunked(MemoryStore):
        chunks_read = 0

        def iter_chunks(self, path: str) -> Iterator[bytes]:
            data = self.get(path)
            for start in range(0, len(data), 1024):
                Chunked.chunks_read += 1
                yield data[start:start + 1024]

    store = Chunked(f"memory://oversized-{os.getpid()}")
    store.put("big.bin", bytes(1 << 20))
    with pytest.raises(OversizedObjectError, match=r"holds more than the 3,000 bytes its index "
                                                   r"entry gives: stopped after 3,072"):
        fetch(store, "big.bin", str(tmp_path / "big.bin"), expected_size=3000, retries=3)
    assert Chunked.chunks_read == 3  # stopped at the first chunk past it, one attempt
    assert not os.listdir(tmp_path)  # nothing left behind
    assert fetch(store, "big.bin", str(tmp_path / "big.bin"),
                 expected_size=1 << 20).bytes == 1 << 20
