"""Training from a warmed cache when the remote cannot be reached (issue: drop-in lifecycle).

A full epoch caches every shard; then the remote is made unreachable for real (the fault proxy
refuses or stalls every connection, the HTTP server answers 503, or the files are deleted) and
the dataset is built again over the same `local` and `remote`. The cached index is used with one
`RemoteUnavailableWarning` naming the remote and the reason, and the epoch is the same. A shard
that is neither cached nor fetchable fails naming the shard, the cache and the remote.
"""

from __future__ import annotations

import http.server
import os
import shutil
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from streaming import Stream, StreamingDataset
from streaming.errors import RemoteUnavailableWarning, ShardUnavailableError
from streaming.storage.transfer import TransferError
from tests.storage.proxy import Fault, FaultProxy
from tests.storage.sample_data import check_sample, write_local
from tests.storage.servers import RangeHandler, Server

N = 160  # 4 shards of ~40 samples


def _epoch(dataset: StreamingDataset) -> list[int]:
    return [check_sample(sample) for sample in dataset]


def _remote_warnings(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, RemoteUnavailableWarning)]


@pytest.fixture(params=["http", "moto"])
def proxied(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
            tmp_path: Any) -> Iterator[tuple[str, FaultProxy]]:
    """(URL of a fresh dataset seen through a new fault proxy, the proxy)."""
    server: Server = request.getfixturevalue(f"{request.param}_server").apply_env(monkeypatch)
    url = server.fresh_url()
    if server.name == "http":
        write_local(str(tmp_path / "src"), N)
        for name in os.listdir(tmp_path / "src"):
            server.seed(f"{url}/{name}", (tmp_path / "src" / name).read_bytes())
    else:
        write_local(url, N)
    proxy = FaultProxy(server.host_port)
    if server.name == "http":
        url = url.replace(f":{server.host_port[1]}/", f":{proxy.port}/")
    else:
        monkeypatch.setenv("S3_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
    try:
        yield url, proxy
    finally:
        proxy.stop()


def _dataset(url: str, local: Any, **kwargs: Any) -> StreamingDataset:
    kwargs.setdefault("download_retry", 2)
    kwargs.setdefault("shuffle", True)
    return StreamingDataset(remote=url, local=str(local), batch_size=8, **kwargs)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault", ["refuse", "stall"])
def test_warm_cache_trains_when_the_remote_is_unreachable(proxied: tuple[str, FaultProxy],
                                                          fault: str, tmp_path: Any) -> None:
    url, proxy = proxied
    with _dataset(url, tmp_path / "cache") as dataset:
        first = _epoch(dataset)
    assert sorted(first) == list(range(N))
    proxy.reset(Fault(fault, delay=60))
    proxy.drop_all()
    fetched_before = proxy.connections
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with _dataset(url, tmp_path / "cache", download_timeout=1) as dataset:
            again = _epoch(dataset)
    assert again == first  # same order: same index, same seed
    messages = _remote_warnings(record)
    assert len(messages) == 1, messages
    assert url in messages[0] and "cached copy" in messages[0]
    reason = messages[0].split("(", 1)[1]
    assert ("Timeout" in reason) if fault == "stall" else ("Error" in reason)
    assert proxy.connections > fetched_before  # it did try the remote first


@pytest.mark.timeout(120)
def test_a_shard_neither_cached_nor_fetchable_names_itself(proxied: tuple[str, FaultProxy],
                                                           tmp_path: Any) -> None:
    url, proxy = proxied
    with _dataset(url, tmp_path / "cache", shuffle=False) as dataset:
        head = [check_sample(s) for _, s in zip(range(5), dataset)]
    assert head == list(range(5))
    proxy.reset(Fault("refuse"))
    proxy.drop_all()
    with pytest.warns(RemoteUnavailableWarning):
        dataset = _dataset(url, tmp_path / "cache", shuffle=False, predownload=8)
    with dataset, pytest.raises(TransferError) as info:
        _epoch(dataset)
    text = str(info.value)
    assert "shard.0000" in text and "failed after 2 attempts" in text
    assert ("127.0.0.1" in text) or ("s3://" in text)


def test_missing_remote_index_falls_back_and_a_missing_shard_names_the_remote(
        tmp_path: Any) -> None:
    remote, local = str(tmp_path / "remote"), str(tmp_path / "cache")
    write_local(remote, N, compression=None)
    with StreamingDataset(remote=remote, local=local, batch_size=8) as dataset:
        head = [check_sample(s) for _, s in zip(range(50), dataset)]  # shards 0-1 (and a few)
    assert head == list(range(50))
    shutil.rmtree(remote)
    with pytest.warns(RemoteUnavailableWarning, match="FileNotFoundError") as record:
        dataset = StreamingDataset(remote=remote, local=local, batch_size=8)
    assert len(_remote_warnings(list(record))) == 1
    with dataset:
        ids = []
        with pytest.raises(ShardUnavailableError) as info:
            for sample in dataset:
                ids.append(check_sample(sample))
    assert ids[:50] == list(range(50))  # everything cached was served first
    text = str(info.value)
    assert text.startswith("Shard ") and "shard.000" in text
    assert local in text and f"from its remote {remote}" in text
    assert "FileNotFoundError" in text
    assert isinstance(info.value, FileNotFoundError)  # what reference users catch


class _Unavailable(RangeHandler):
    """Every request fails with 503, as an overloaded or broken server does."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.send_error(503, "Service Unavailable")

    do_HEAD = do_GET


@pytest.mark.timeout(120)
def test_server_errors_fall_back_to_the_cache(http_server: Server, tmp_path: Any) -> None:
    write_local(str(tmp_path / "src"), N)
    failing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    thread = threading.Thread(target=failing.serve_forever, daemon=True)
    thread.start()
    try:
        url = http_server.fresh_url()
        for name in os.listdir(tmp_path / "src"):
            http_server.seed(f"{url}/{name}", (tmp_path / "src" / name).read_bytes())
        with _dataset(url, tmp_path / "cache") as dataset:
            first = _epoch(dataset)
        # the same dataset, served (or rather not) by a failing server at another address
        bad_url = url.replace(f":{http_server.host_port[1]}/", f":{failing.server_address[1]}/")
        with pytest.warns(RemoteUnavailableWarning, match="503"):
            dataset = StreamingDataset(remote=bad_url, local=str(tmp_path / "cache"),
                                       batch_size=8, shuffle=True, download_retry=2)
        with dataset:
            assert _epoch(dataset) == first
    finally:
        failing.shutdown()
        failing.server_close()


def test_each_stream_of_a_mix_falls_back_on_its_own(tmp_path: Any) -> None:
    remotes = [str(tmp_path / f"remote{i}") for i in range(2)]
    locals_ = [str(tmp_path / f"cache{i}") for i in range(2)]
    for remote in remotes:
        write_local(remote, N, compression=None)

    def streams() -> list[Stream]:
        return [Stream(remote=r, local=l, proportion=0.5) for r, l in zip(remotes, locals_)]

    with StreamingDataset(streams=streams(), batch_size=8, shuffle=True) as dataset:
        first = [check_sample(s) for s in dataset]
    shutil.rmtree(remotes[0])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        dataset = StreamingDataset(streams=streams(), batch_size=8, shuffle=True)
    messages = _remote_warnings(record)
    assert len(messages) == 1 and remotes[0] in messages[0] and remotes[1] not in messages[0]
    with dataset:
        assert [check_sample(s) for s in dataset] == first


def test_a_reachable_remote_index_is_used_without_warning(tmp_path: Any) -> None:
    remote, local = str(tmp_path / "remote"), str(tmp_path / "cache")
    write_local(remote, N, compression=None)
    with StreamingDataset(remote=remote, local=local, batch_size=8) as dataset:
        assert len(_epoch(dataset)) == N
    shutil.rmtree(remote)
    write_local(remote, N // 2, compression=None)  # the remote changed: it wins over the cache
    with warnings.catch_warnings():
        warnings.simplefilter("error", RemoteUnavailableWarning)
        with StreamingDataset(remote=remote, local=local, batch_size=8) as dataset:
            assert sorted(_epoch(dataset)) == list(range(N // 2))
