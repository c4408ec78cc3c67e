"""A cold start's first batch, read from the remote while its shard is still being fetched.

The remote is a real HTTP server on 127.0.0.1 that holds back every whole-file download until
the test lets it go, while ranged reads go through: the first batch can only arrive through
`streaming.cache.early_reads`. The rest of the epoch then comes from the cache, and every sample
equals the one a warm cache gives.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streaming import MDSWriter, StreamingDataset
from streaming.cache.early_reads import EARLY_READS_ENV, remote_samples
from streaming.cache.prepare import ShardSource
from streaming.format import JSONWriter, load_readers
from streaming.storage import open_store
from tests.storage.servers import QuietHTTPServer, RangeHandler

N, BATCH = 600, 16
COLUMNS = {"x": "ndarray:int32", "s": "str", "b": "bytes", "i": "int", "f": "float32",
           "fixed": "ndarray:float32:4"}


def _sample(i: int) -> dict[str, Any]:
    return {"x": np.arange(1 + i % 7, dtype=np.int32) * i, "s": "é" * (i % 5),
            "b": bytes([i % 256]) * (i % 9), "i": i, "f": np.float32(i / 3),
            "fixed": np.full(4, i, np.float32)}


def _write(out: Path, **kwargs: Any) -> str:
    with MDSWriter(out=str(out), columns=COLUMNS, size_limit=1 << 14, **kwargs) as writer:
        for i in range(N):
            writer.write(_sample(i))
    return str(out)


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        other = b[key]
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and np.array_equal(value, other), key
            assert value.flags.writeable == other.flags.writeable, key
        else:
            assert type(value) is type(other) and value == other, key


class _GatedHandler(RangeHandler):
    """Ranged reads go through; a whole shard waits until `server.gate` is set."""

    def do_GET(self) -> None:
        if self.path.endswith(".mds") and not self.headers.get("Range"):
            self.server.held += 1  # type: ignore[attr-defined]
            self.server.gate.wait(120)  # type: ignore[attr-defined]
        super().do_GET()


@pytest.fixture
def gated_remote(tmp_path: Path) -> Iterator[tuple[str, threading.Event, Any]]:
    root = tmp_path / "www"
    _write(root / "data")
    httpd = QuietHTTPServer(("127.0.0.1", 0), _GatedHandler)
    httpd.root = str(root)  # type: ignore[attr-defined]
    httpd.requests = httpd.held = 0  # type: ignore[attr-defined]
    httpd.gate = gate = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/data", gate, httpd
    finally:
        gate.set()
        httpd.shutdown()
        httpd.server_close()


def _first_then_rest(items: Iterator[Any], count: int, gate: threading.Event
                     ) -> tuple[list[Any], list[Any]]:
    """Take `count` items from a thread while the gate is shut (a deadline, not a sleep:
    without early reads they would never come), then open it and take the rest."""
    got: queue.Queue = queue.Queue()

    def take() -> None:
        try:
            got.put([next(items) for _ in range(count)])
        except BaseException as err:  # pragma: no cover (reported below)
            got.put(err)

    threading.Thread(target=take, daemon=True).start()
    try:
        first = got.get(timeout=120)
    except queue.Empty:
        pytest.fail("the first items waited for the whole shard")
    finally:
        gate.set()
    if isinstance(first, BaseException):
        raise first
    return first, list(items)


def test_the_switch_turns_early_reads_off(gated_remote, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """With `STREAMING_EARLY_READS=0` the first sample waits for its shard's download (held
    back here), then the epoch runs as usual with no early reads."""
    url, gate, _ = gated_remote
    monkeypatch.setenv(EARLY_READS_ENV, "0")
    dataset = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=BATCH)
    items = iter(dataset)
    got: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: got.put(next(items)), daemon=True).start()
    try:
        with pytest.raises(queue.Empty):  # a bounded look: nothing comes while the gate is shut
            got.get(timeout=0.5)
    finally:
        gate.set()
    first = got.get(timeout=120)
    assert [first["i"]] + [s["i"] for s in items] == list(range(N))
    assert dataset.metrics()["early_samples"] == 0
    dataset.close()


@pytest.mark.parametrize("batched", [False, True], ids=["samples", "batches"])
def test_the_first_batch_comes_before_its_shard_lands(gated_remote, tmp_path: Path,
                                                      batched: bool) -> None:
    url, gate, httpd = gated_remote
    dataset = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=BATCH)
    items = iter(dataset.batches(BATCH) if batched else dataset)
    first, rest = _first_then_rest(items, 1 if batched else BATCH, gate)
    metrics = dataset.metrics()
    assert httpd.held >= 1  # the shard's download was under way, held back, meanwhile
    assert metrics["early_samples"] == BATCH and 0 < metrics["early_bytes"] < 1 << 14
    # Egress counts the early reads on top of every shard's one download.
    shards = sum(r.raw_data.bytes for r in _readers(os.path.join(httpd.root, "data")))
    assert dataset.egress["bytes"] == shards + metrics["early_bytes"]
    dataset.close()

    warm = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=BATCH)
    expected = list(warm.batches(BATCH) if batched else warm)
    assert warm.metrics()["early_samples"] == 0  # everything is local now
    warm.close()
    got = first + rest
    assert len(got) == len(expected)
    if batched:
        for a, b in zip(got, expected):
            assert a.keys() == b.keys()
            for key, value in a.items():
                other = b[key]
                assert type(value) is type(other), key
                if isinstance(value, np.ndarray):
                    assert value.dtype == other.dtype and np.array_equal(value, other), key
                else:  # a list of values (variable shapes, strings, bytes)
                    assert len(value) == len(other), key
                    for v, w in zip(value, other):
                        _same({key: v}, {key: w})
    else:
        assert [s["i"] for s in got] == list(range(N))
        for a, b in zip(got, expected):
            _same(a, b)


def _readers(remote: str) -> list[Any]:
    return load_readers(remote)


def _source(remote: str, **kwargs: Any) -> ShardSource:
    settings = {"local_dir": "", "store": open_store(remote), "keep_zip": False,
                "validate_hash": None, "retries": 0, "timeout": 30.0, **kwargs}
    return ShardSource(**settings)


def test_early_samples_equal_the_shards_own(tmp_path: Path) -> None:
    remote = _write(tmp_path / "remote")
    source = _source(remote)
    rng = np.random.default_rng(0)
    for reader in _readers(remote)[:5]:
        for _ in range(5):
            lo = int(rng.integers(0, reader.samples))  # runs of up to 1/8 of the shard
            hi = int(rng.integers(lo + 1, min(lo + reader.samples // 8, reader.samples) + 1))
            got = remote_samples(reader, source, np.arange(lo, hi))
            assert got is not None and got.nbytes > 0
            for index, sample in zip(range(lo, hi), got.samples):
                _same(sample, reader.get_item(index))
        # Nearby but not consecutive (a short gap) is still one read, in the order asked.
        picked = np.array([3, 1, 2, 0]) % reader.samples
        got = remote_samples(reader, source, picked)
        assert got is not None
        for index, sample in zip(picked.tolist(), got.samples):
            _same(sample, reader.get_item(index))
        reader.close()


def test_no_early_reads_where_they_could_differ_or_cost_much(tmp_path: Path) -> None:
    plain = _write(tmp_path / "plain")
    packed = _write(tmp_path / "packed", compression="zstd")
    hashed = _write(tmp_path / "hashed", hashes=["xxh64"])
    with JSONWriter(out=str(tmp_path / "jsonl"), columns={"i": "int"}) as writer:
        for i in range(10):
            writer.write({"i": i})
    first = np.arange(4)
    reader = _readers(plain)[0]
    assert remote_samples(_readers(packed)[0], _source(packed), first) is None  # zstd
    assert remote_samples(_readers(hashed)[0], _source(hashed, validate_hash="xxh64"),
                          first) is None  # digests check whole files
    # Nor without `validate_hash` when the index has a fast digest, which every download is
    # checked against: a first batch read early used to come from a shard that then failed it.
    assert remote_samples(_readers(hashed)[0], _source(hashed), first) is None
    slow = _write(tmp_path / "slow", hashes=["sha1"])  # not checked unless asked for
    assert remote_samples(_readers(slow)[0], _source(slow), first) is not None
    assert remote_samples(reader, _source(plain, store=None), first) is None  # no remote
    far = np.array([0, reader.samples - 1])
    assert reader.samples > 40 and remote_samples(reader, _source(plain), far) is None
    jsonl = str(tmp_path / "jsonl")
    assert remote_samples(_readers(jsonl)[0], _source(jsonl), first) is None
    assert remote_samples(reader, _source(plain), np.arange(0)) is None


def test_a_shard_that_differs_from_its_index_is_left_to_the_normal_path(tmp_path: Path) -> None:
    remote = _write(tmp_path / "remote")
    reader = _readers(remote)[0]
    path = os.path.join(remote, reader.raw_data.basename)
    with open(path, "r+b") as f:  # offsets that point back into the header
        f.seek(4)
        f.write((0).to_bytes(4, "little") * 3)
    assert remote_samples(reader, _source(remote), np.arange(2)) is None
    os.truncate(path, 100)  # cut short: the offsets table itself is incomplete
    assert remote_samples(reader, _source(remote), np.arange(40)) is None


def test_a_remote_that_refuses_ranges_falls_back_to_the_download(tmp_path: Path) -> None:
    class NoRanges(RangeHandler):
        def do_GET(self) -> None:
            if self.headers.get("Range"):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super().do_GET()

    root = tmp_path / "www"
    _write(root / "data")
    httpd = QuietHTTPServer(("127.0.0.1", 0), NoRanges)
    httpd.root = str(root)  # type: ignore[attr-defined]
    httpd.requests = 0  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/data"
        dataset = StreamingDataset(remote=url, local=str(tmp_path / "cache"), batch_size=BATCH)
        assert [s["i"] for s in dataset] == list(range(N))
        assert dataset.metrics()["early_samples"] == 0
        dataset.close()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_first_batch_that_is_much_of_its_shard_waits_for_the_shard(tmp_path: Path) -> None:
    """Reading most of a shard early would double its egress for little time saved."""
    remote = str(tmp_path / "big")
    with MDSWriter(out=remote, columns={"b": "bytes"}, size_limit=100_000) as writer:
        for i in range(40):
            writer.write({"b": bytes([i]) * 10_000})
    reader = _readers(remote)[0]
    assert reader.samples >= 8
    assert remote_samples(reader, _source(remote), np.arange(2)) is not None  # 20% of it
    assert remote_samples(reader, _source(remote), np.arange(3)) is None  # 30% of it
