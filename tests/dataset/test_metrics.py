"""Runtime metrics of a real multi-worker epoch through all three outlets, and bad settings.

A compressed, hashed dataset in a local folder standing in for a bucket, read by a
`StreamingDataLoader` with 2 workers: the counters summed over the workers must equal what the
index says was fetched and decompressed and what the loop saw; the JSON-lines file, the log
summary and Prometheus' text (and its HTTP endpoint) carry the same numbers.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import urllib.request

import numpy as np
import pytest

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
from streaming.metrics import snapshot
from streaming.metrics.report import (
    INTERVAL_ENV,
    MetricsReporter,
    prometheus_text,
    serve_prometheus,
    summary_line,
)

N, BATCH = 2_000, 50


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("metrics") / "remote")
    rng = np.random.default_rng(3)
    with MDSWriter(out=out, columns={"id": "int", "x": "ndarray:uint16:64"}, compression="zstd",
                   hashes=["xxh64"], size_limit=20_000) as writer:
        for i in range(N):
            writer.write({"id": i, "x": rng.integers(0, 1000, 64, dtype=np.uint16)})
    return out


def _index(remote: str) -> list[dict]:
    with open(os.path.join(remote, "index.json")) as f:
        return json.load(f)["shards"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_two_worker_epoch_in_every_outlet(remote, tmp_path, caplog):
    path = str(tmp_path / "logs" / "metrics.jsonl")
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=BATCH,
                               shuffle=True, validate_hash="xxh64")
    loader = StreamingDataLoader(dataset, batch_size=BATCH, num_workers=2, metrics_path=path,
                                 metrics_interval=0.05, metrics_log_interval=0.05)
    with caplog.at_level(logging.INFO, logger="streaming.metrics"):
        seen = sorted(int(i) for batch in loader for i in batch["id"])
        loader.close()  # workers gone, a last line written
    assert seen == list(range(N))
    m = loader.metrics()
    shards = _index(remote)
    assert m["samples"] == N and m["batches"] == N // BATCH
    assert m["loader_batches"] == N // BATCH
    assert m["fetches"] == len(shards)
    assert m["fetch_bytes"] == sum(s["zip_data"]["bytes"] for s in shards)
    assert m["decompressed_bytes"] == sum(s["raw_data"]["bytes"] for s in shards)
    assert list(m["fetch_by_scheme"]) == ["local"]
    assert m["fetch_retries"] == 0 and m["fetch_errors"] == 0
    assert m["decompress_seconds"] > 0 and m["decode_seconds"] > 0
    assert m["decoded_samples"] == N and m["plans"] == 1 and m["index_loads"] == 1
    assert m["prefetch_concurrency"] >= 1
    assert 0.0 <= m["stall_percent"] <= 100.0
    assert m["loader_wait_seconds"] > 0 and m["elapsed_seconds"] > 0
    # Reads sum only the rows processes counted in: the two workers' and the main process's,
    # and they hold every count of the whole table.
    cache = dataset._ss_cache
    assert len(np.flatnonzero(cache.metrics_rows.numpy())) == 3
    now = m["time"]
    assert snapshot(cache._used_rows(), now) == snapshot(cache.metrics.numpy(), now)
    again = dataset.metrics()  # the dataset reads the same node-wide counters
    assert {k: again[k] for k in ("samples", "fetch_bytes", "loader_batches")} == {
        k: m[k] for k in ("samples", "fetch_bytes", "loader_batches")}

    with open(path) as f:
        lines = [json.loads(line) for line in f]
    assert len(lines) >= 2 and lines[-1]["samples"] == N
    assert all(a["time"] <= b["time"] for a, b in zip(lines, lines[1:]))
    assert [r for r in caplog.records if r.name == "streaming.metrics"
            and f"{N:,} samples" in r.getMessage()]

    text = prometheus_text(m)
    assert f"streaming_samples_total {float(N)}" in text
    assert f'streaming_fetch_scheme_bytes_total{{scheme="local"}} {float(m["fetch_bytes"])}' \
        in text
    port = _free_port()
    server = serve_prometheus(dataset.metrics, port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            served = r.read().decode()
    finally:
        server.shutdown()
    assert f"streaming_samples_total {float(N)}" in served
    dataset.close()


def test_evictions_and_waits_are_counted(remote, tmp_path):
    shard_raw = max(s["raw_data"]["bytes"] + s["zip_data"]["bytes"] for s in _index(remote))
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=BATCH,
                               cache_limit=5 * shard_raw, predownload=BATCH)
    assert sum(1 for _ in dataset) == N
    m = dataset.metrics()
    assert m["evictions"] >= 1  # 15 shards through room for about 8
    assert m["evicted_bytes"] > 0
    assert m["shard_waits"] >= 1 and m["shard_wait_seconds"] > 0
    assert "evictions" in summary_line(m)
    dataset.close()


def test_a_bad_interval_is_refused_before_training(remote, tmp_path, monkeypatch):
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=BATCH)
    monkeypatch.setenv(INTERVAL_ENV, "0")
    with pytest.raises(ValueError, match=INTERVAL_ENV):
        StreamingDataLoader(dataset, batch_size=BATCH, metrics_path=str(tmp_path / "m.jsonl"))
    with pytest.raises(ValueError, match="positive"):
        MetricsReporter(dataset.metrics, str(tmp_path / "m.jsonl"), interval=-1)
    dataset.close()


def test_an_unwritable_metrics_path_never_stops_training(remote, tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=BATCH)
    loader = StreamingDataLoader(dataset, batch_size=BATCH,
                                 metrics_path=str(blocked / "metrics.jsonl"),
                                 metrics_interval=0.01)
    with caplog.at_level(logging.WARNING, logger="streaming.metrics"):
        assert sum(len(b["id"]) for b in loader) == N
        loader.close()
    warnings = [r for r in caplog.records if "Could not write metrics" in r.getMessage()]
    assert len(warnings) == 1  # said once, not once per interval
    dataset.close()


def test_headspace_replays_the_first_batches_from_memory(remote, tmp_path):
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=BATCH)
    loader = StreamingDataLoader(dataset, batch_size=BATCH, num_workers=2, headspace=3)
    batches = [b["id"].tolist() for b in loader]
    assert len(batches) == len(loader) == N // BATCH  # a whole epoch's worth of batches
    assert all(batches[i] == batches[i % 3] for i in range(len(batches)))
    assert len({i for b in batches for i in b}) == 3 * BATCH
    m = loader.metrics()
    assert m["samples"] < N  # the workers were stopped: the rest never loaded
    assert m["loader_batches"] == N // BATCH
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="headspace"):
            StreamingDataLoader(dataset, batch_size=BATCH, headspace=bad)
    dataset.close()


def test_every_count_and_byte_total_is_an_int():
    """`early_samples` and `early_bytes` came out as floats (a list of names missed them)."""
    from streaming.metrics.counters import COLUMNS, UNITS

    table = np.zeros((2, len(COLUMNS)))
    table[:, COLUMNS.index("early_samples")] = 16
    table[:, COLUMNS.index("early_bytes")] = 196
    out = snapshot(table, now=1.0)
    assert out["early_samples"] == 32 and type(out["early_samples"]) is int
    for name, unit in UNITS.items():
        if unit in ("count", "bytes") and name in out:
            assert type(out[name]) is int, name
    for name in ("fetches", "fetch_bytes", "fetch_retries", "fetch_errors"):
        assert type(out[name]) is int, name
