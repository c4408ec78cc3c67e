"""`streaming simulate` through its real command: streams from indexes (local, remote: only
index.json is fetched) or made up, the three outputs, and the bad settings."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import numpy as np
from click.testing import CliRunner

from streaming import MDSWriter
from streaming.cli.app import cli
from tests.storage.servers import start_http


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["simulate", *args], catch_exceptions=False)


def _json(*args: str) -> dict[str, Any]:
    result = _run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _dataset(out: str, samples: int = 600) -> str:
    rng = np.random.default_rng(0)
    with MDSWriter(out=out, columns={"x": "bytes"}, size_limit=20_000) as writer:
        for _ in range(samples):
            writer.write({"x": rng.bytes(1000)})
    return out


def _shard_bytes(out: str) -> int:
    return sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out)
               if n.endswith(".mds"))


def test_a_local_index_is_all_it_reads(tmp_path):
    data = _dataset(str(tmp_path / "data"))
    total = _shard_bytes(data)
    only_index = tmp_path / "index_only"
    only_index.mkdir()
    shutil.copy(os.path.join(data, "index.json"), only_index / "index.json")
    report = _json(str(only_index), "--batch-size", "10", "--workers", "2",
                   "--bandwidth", "1mb", "--step-time", "1ms")
    node = report["epochs"][0]["nodes"][0]
    assert node["fetch_bytes"] == total and node["evictions"] == 0
    assert report["samples_per_epoch"] == 600
    assert report["seconds"] >= total / 2**20  # the link is the floor
    assert report["first_batch_seconds"] > 0


def test_a_remote_index_is_fetched_alone(tmp_path):
    data = _dataset(str(tmp_path / "data"))
    server = start_http(str(tmp_path / "http"))
    try:
        url = server.fresh_url()
        for name in os.listdir(data):
            server.seed(f"{url}/{name}", (tmp_path / "data" / name).read_bytes())
        httpd = server.extra["httpd"]
        before = httpd.requests
        report = _json(url, "--batch-size", "10", "--nodes", "2", "--ranks-per-node", "2",
                       "--workers", "1", "--num-canonical-nodes", "2", "--shuffle")
        assert httpd.requests - before == 1  # index.json, no shard
    finally:
        server.stop()
    assert sum(n["fetch_bytes"] for n in report["epochs"][0]["nodes"]) >= _shard_bytes(data)
    assert report["streams"] == [url]


def test_synthetic_streams_mix_and_the_table_and_plot(tmp_path):
    plot = str(tmp_path / "sim.png")
    result = _run("--synthetic", "20,100,1000000", "--synthetic", "10,100,1000000,250000",
                  "--proportion", "0.5,0.5", "--epoch-size", "2000", "--batch-size", "16",
                  "--workers", "2", "--bandwidth", "20mb", "--latency", "20ms",
                  "--cache-limit", "12mb", "--epochs", "2", "--plot", plot)
    assert result.exit_code == 0, result.output
    assert "time to first batch" in result.output and "evictions" in result.output
    assert result.output.count("\n    1    0 ") == 1  # a row for epoch 1, node 0
    with open(plot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_json_has_the_documented_keys():
    report = _json("--synthetic", "10,100,100000", "--batch-size", "8", "--nodes", "2",
                   "--workers", "0", "--bandwidth", "10mb")
    for key in ("config", "samples_per_epoch", "seconds", "first_batch_seconds",
                "samples_per_second", "stall_fraction", "epochs", "timeline", "events"):
        assert key in report
    node = report["epochs"][0]["nodes"][1]
    for key in ("fetch_bytes", "fetches", "refetches", "evictions", "peak_cache_bytes",
                "samples_per_second"):
        assert key in node
    assert len(report["timeline"]["samples_per_second"]) == 2


def test_bad_settings_exit_with_a_reason(tmp_path):
    base = ("--synthetic", "10,100,100000", "--batch-size", "8")
    cases = [(["--bandwidth", "0"], "bandwidth"), (["--latency", "fast"], "--latency"),
             (["--cache-limit", "100kb"], "four times the largest shard"),
             (["--workers", "64", "--ranks-per-node", "64"], "readers"),
             (["--shuffle", "--shuffle-algo", "nope"], "nope")]
    for extra, message in cases:
        result = _run(*base, *extra)
        assert result.exit_code in (1, 2) and message in result.output, (extra, result.output)
    result = _run(*base, "--shuffle", "--shuffle-algo", "nope")
    assert "Invalid value: Unknown shuffle_algo 'nope'; known: " in result.output  # quoted once
    result = _run("--batch-size", "8")
    assert result.exit_code == 2 and "--synthetic" in result.output
    result = _run(str(tmp_path / "missing"), "--batch-size", "8")
    assert result.exit_code == 1 and "Error" in result.output
    result = _run("--synthetic", "10,100", "--batch-size", "8")
    assert result.exit_code == 2 and "SHARDS,SAMPLES,BYTES" in result.output


def test_an_index_file_a_slashed_split_and_a_short_latency(tmp_path):
    out = _dataset(str(tmp_path / "ds" / "train"))
    by_dir = _json(out, "--batch-size", "8", "--workers", "1")
    by_file = _json(os.path.join(out, "index.json"), "--batch-size", "8", "--workers", "1")
    by_split = _json(str(tmp_path / "ds"), "--split", "/train/", "--batch-size", "8",
                     "--workers", "1")
    assert by_file["epochs"] == by_dir["epochs"] == by_split["epochs"]
    table = _run(out, "--batch-size", "8", "--workers", "1", "--latency", "300us").output
    assert "latency 300 us" in table  # it said "0 ms"


def test_sizes_past_what_numbers_hold_exit_with_a_reason():
    result = _run("--synthetic", "100000,1,100000000000000", "--batch-size", "8",
                  "--workers", "1")
    assert result.exit_code == 1, result.output
    assert "more than 64-bit counters hold" in result.output  # it said "in memory"
    assert "Traceback" not in result.output


def test_a_plot_that_cannot_be_written_is_refused_before_the_run(tmp_path):
    """The run went through to the end, then failed to save the plot and printed nothing."""
    result = _run("--synthetic", "10,100,100000", "--batch-size", "8",
                  "--plot", str(tmp_path / "missing" / "x.png"))
    assert result.exit_code == 2 and "its folder does not exist" in result.output


def test_a_progress_bar_unless_json_or_asked_not_to():
    args = ("--synthetic", "20,50,10000", "--batch-size", "8", "--workers", "1")
    assert "simulating" in _run(*args).output  # the bar, on stderr
    assert "simulating" not in _run(*args, "--no-progress").output
    assert "simulating" not in _run(*args, "--json").output
