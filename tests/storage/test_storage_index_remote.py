"""Reading a dataset's remote index at construction: retries, deadlines, caching and healing.

The index is read through `tests/storage/proxy.py` in front of the loopback HTTP server, so the
first GET can be refused, cut or stalled for real. The index is cached only once it parsed, a
cached copy that cannot be parsed is replaced, and the cache keeps working when the remote is
unreachable.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from streaming import MDSWriter, StreamingDataset
from streaming.errors import IndexFormatError, RemoteUnavailableWarning, UnverifiedCacheWarning
from tests.storage.proxy import Fault, FaultProxy
from tests.storage.sample_data import check_sample, publish
from tests.storage.servers import Server

N = 80  # 2 shards


@pytest.fixture
def proxied(http_server: Server) -> Iterator[tuple[str, str, FaultProxy]]:
    """(dataset URL through a fresh proxy, the same dataset's direct URL, the proxy)."""
    url = publish(http_server, N)
    proxy = FaultProxy(http_server.host_port)
    try:
        yield url.replace(f":{http_server.host_port[1]}/", f":{proxy.port}/"), url, proxy
    finally:
        proxy.stop()


def _open(remote: str, cache: Any, **kwargs: Any) -> StreamingDataset:
    kwargs.setdefault("download_retry", 2)
    return StreamingDataset(remote=remote, local=str(cache), batch_size=4, **kwargs)


def _served_index(http_server: Server, url: str) -> bytes:
    root = http_server.extra["httpd"].root
    with open(f"{root}/data/{url.rsplit('/', 1)[1]}/index.json", "rb") as f:
        return f.read()


@pytest.mark.parametrize("fault", [Fault("refuse"), Fault("drop", after_bytes=60)],
                         ids=["refused", "cut"])
def test_a_failed_first_index_read_is_retried(proxied: tuple[str, str, FaultProxy],
                                              http_server: Server, fault: Fault,
                                              tmp_path: Any) -> None:
    url, direct, proxy = proxied
    proxy.queue(fault)
    with _open(url, tmp_path / "cache") as dataset:
        assert dataset.num_samples == N
        assert proxy.connections >= 2  # the failed connection, then the retry
        assert (tmp_path / "cache" / "index.json").read_bytes() == _served_index(http_server,
                                                                                 direct)


def test_a_stalled_index_read_is_cut_by_download_timeout(proxied: tuple[str, str, FaultProxy],
                                                         tmp_path: Any) -> None:
    url, _, proxy = proxied
    proxy.queue(Fault("stall", delay=30))
    started = time.monotonic()
    with _open(url, tmp_path / "cache", download_timeout=1) as dataset:
        assert dataset.num_samples == N
    assert time.monotonic() - started < 20  # one 1 s attempt and a ~1.5 s pause, not 30-60 s


def test_an_unreachable_remote_falls_back_to_the_cached_index(
        proxied: tuple[str, str, FaultProxy], tmp_path: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    url, _, proxy = proxied
    with _open(url, tmp_path / "cache") as dataset:
        assert sorted(check_sample(s) for s in dataset) == list(range(N))
    proxy.reset(default=Fault("refuse"))
    with pytest.warns(RemoteUnavailableWarning, match="using the cached copy"):
        dataset = _open(url, tmp_path / "cache", download_retry=1)
    with dataset:
        assert sorted(check_sample(s) for s in dataset) == list(range(N))  # shards are cached


def test_an_unparseable_cached_index_is_replaced(http_server: Server, tmp_path: Any) -> None:
    url = publish(http_server, N)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "index.json").write_bytes(b'{"version": 2, "sha')  # a truncated earlier copy
    with _open(url, cache) as dataset:
        assert sorted(check_sample(s) for s in dataset) == list(range(N))
    assert (cache / "index.json").read_bytes() == _served_index(http_server, url)


def test_a_bad_remote_index_is_neither_cached_nor_over_a_good_copy(http_server: Server,
                                                                   tmp_path: Any) -> None:
    url = publish(http_server, N)
    cache = tmp_path / "cache"
    _open(url, cache).close()
    good = (cache / "index.json").read_bytes()
    http_server.seed(f"{url}/index.json", b"<html>maintenance</html>")
    with pytest.raises(IndexFormatError, match=f"Index file at {url}/index.json is empty or "
                       "corrupted"):
        _open(url, cache)
    assert (cache / "index.json").read_bytes() == good


def _seed_values(server: Server, url: str, values: range, tmp_path: Any,
                 compression: str | None = "zstd") -> None:
    """A dataset of samples {'v': value}, 4 per shard and no digests (zstd by default), seeded
    at `url` (replacing what is there): full shards have the same raw size whatever the
    values, and uncompressed, the index is the same whatever they are."""
    out = tmp_path / f"out-{values.start}-{len(values)}"
    with MDSWriter(out=str(out), columns={"v": "int"}, size_limit=226,
                   compression=compression) as writer:
        for value in values:
            writer.write({"v": value})
    for path in sorted(out.iterdir()):
        server.seed(f"{url}/{path.name}", path.read_bytes())


def _next_whole_second() -> None:
    """Wait until the clock has entered a later whole second: S3 lists modification times in
    whole seconds, so a rewrite must not share the second of the copy it makes stale."""
    target = int(time.time()) + 1.05
    while time.time() < target:
        time.sleep(0.02)


@pytest.mark.parametrize("where", ["s3", "http", "http-undated"])
def test_a_same_size_rewrite_in_place_is_caught_by_modification_times_or_named(
        where: str, seaweed_server: Server, http_server: Server, tmp_path: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The dataset is rewritten at its remote with other values in shards of the same sizes (no
    digests in the index). An S3 listing's modification times, or each file's Last-Modified
    where HTTP cannot list, show the cached copies are older: they are fetched again. A server
    that gives no dates: the warning names the files kept."""
    server = seaweed_server.apply_env(monkeypatch) if where == "s3" else http_server
    if where == "http-undated":
        monkeypatch.setattr(http_server.extra["httpd"], "send_dates", False)
    url = server.fresh_url()
    _seed_values(server, url, range(30), tmp_path)
    cache = tmp_path / "cache"
    with _open(url, cache) as dataset:
        assert [s["v"] for s in dataset] == list(range(30))
    _next_whole_second()
    _seed_values(server, url, range(100, 125), tmp_path)  # 6 full shards of 8 again, then 1
    if where != "http-undated":
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnverifiedCacheWarning)
            with _open(url, cache) as dataset:
                assert [s["v"] for s in dataset] == list(range(100, 125))
    else:
        with pytest.warns(UnverifiedCacheWarning, match=r"6 cached file\(s\) \(shard.00000.mds, "
                          r"shard.00001.mds, shard.00002.mds, \.\.\.\) have the same size"):
            dataset = _open(url, cache)
        with dataset:  # what the warning is about: the old values of the 6 shards kept
            assert [s["v"] for s in dataset] == [*range(24), 124]


@pytest.mark.parametrize("where", ["s3", "http", "http-undated"])
def test_a_rewrite_under_the_same_index_text_is_caught_by_the_index_time_or_named(
        where: str, seaweed_server: Server, http_server: Server, tmp_path: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewritten in place with an index identical to the byte: the remote's index is newer
    than the cached copy, so the cached shards are judged by their times as after a changed
    index; once judged, the next start asks for nothing more. A server that gives no dates
    cannot tell a rewrite apart (and is not warned about at every start)."""
    server = seaweed_server.apply_env(monkeypatch) if where == "s3" else http_server
    if where == "http-undated":
        monkeypatch.setattr(http_server.extra["httpd"], "send_dates", False)
    url = server.fresh_url()
    # uncompressed: the index reads the same to the byte for any 40 values (fixed-length tokens
    # from another tokenizer, say)
    _seed_values(server, url, range(40), tmp_path, compression=None)
    cache = tmp_path / "cache"
    with _open(url, cache) as dataset:
        assert [s["v"] for s in dataset] == list(range(40))
    text = (cache / "index.json").read_bytes()
    _next_whole_second()
    _seed_values(server, url, range(500, 540), tmp_path, compression=None)
    assert (cache / "index.json").read_bytes() == text == _served_index(server, url) \
        if where != "s3" else (cache / "index.json").read_bytes() == text
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedCacheWarning)
        with _open(url, cache) as dataset:
            expected = list(range(40)) if where == "http-undated" else list(range(500, 540))
            assert [s["v"] for s in dataset] == expected
        if where == "http":  # judged once: a third start gets no shard again
            before = http_server.extra["httpd"].requests
            with _open(url, cache) as dataset:
                assert [s["v"] for s in dataset] == list(range(500, 540))
            # one request: the index, whose answer carries its time (no HEAD besides)
            assert http_server.extra["httpd"].requests - before == 1
