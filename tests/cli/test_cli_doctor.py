"""`streaming doctor` names the bottleneck of three staged situations, through its real command.

- a throttled network (an HTTP server behind the fault proxy's bandwidth throttle);
- a slow decode (a registered encoding that takes 2 ms per value) with no worker to spare it
  ("too few workers"), and with a worker per CPU ("decode-bound").

In-process through click (the registered encoding must reach the forked workers); `--json` for
the assertions, the text and `--plot` checked once. The verdict rules on plain numbers:
`test_diagnose_rules`.
"""

from __future__ import annotations

import json
import os
import struct
import time
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from streaming import MDSWriter
from streaming.cli.app import cli
from streaming.cli.doctor import diagnose
from streaming.format.encodings import Encoding
from streaming.format.encodings.table import _encodings, register_encoding
from tests.storage.proxy import Fault, FaultProxy
from tests.storage.servers import start_http

pytestmark = pytest.mark.slow


class SlowInt(Encoding):
    """An int whose decoding takes 2 ms (a stand-in for an expensive user decoder)."""

    size = 8

    def encode(self, obj: Any) -> bytes:
        return struct.pack("<q", int(obj))

    def decode(self, data: bytes | memoryview) -> int:
        time.sleep(0.002)
        return int(struct.unpack("<q", data)[0])


@pytest.fixture(scope="module")
def slow_dataset(tmp_path_factory) -> Any:
    register_encoding("slow_int_test", SlowInt)
    out = str(tmp_path_factory.mktemp("slow") / "data")
    with MDSWriter(out=out, columns={"id": "int", "v": "slow_int_test"},
                   size_limit=4_000) as writer:
        for i in range(2_000):
            writer.write({"id": i, "v": i})
    yield out
    _encodings.pop("slow_int_test", None)


def _doctor(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["doctor", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _verdicts(report: dict[str, Any]) -> list[str]:
    return [f["verdict"] for f in report["findings"]]


def test_slow_decode_in_one_process_needs_workers(slow_dataset):
    report = _doctor(slow_dataset, "--workers", "0", "--batch-size", "16", "--batches", "40",
                     "--cpus", "2")
    assert _verdicts(report)[0] == "too few workers"
    assert report["metrics"]["decode_seconds"] > 0.5 * report["wall_seconds"]


def test_slow_decode_with_a_worker_per_cpu_is_decode_bound(slow_dataset, tmp_path):
    plot = str(tmp_path / "doctor.png")
    report = _doctor(slow_dataset, "--workers", "2", "--batch-size", "16", "--batches", "60",
                     "--cpus", "2", "--plot", plot)
    assert _verdicts(report)[0] == "decode-bound"
    with open(plot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_a_throttled_network_is_network_bound(tmp_path):
    server = start_http(str(tmp_path / "http"))
    url = server.fresh_url()
    src = tmp_path / "src"
    rng = np.random.default_rng(0)
    with MDSWriter(out=str(src), columns={"x": "ndarray:uint8:4096"},
                   size_limit=100_000) as writer:
        for _ in range(600):
            writer.write({"x": rng.integers(0, 255, 4096, dtype=np.uint8)})
    for name in os.listdir(src):
        server.seed(f"{url}/{name}", (src / name).read_bytes())
    proxy = FaultProxy(server.host_port)
    # 100 KB/s per connection: slow enough to stay the bottleneck when a loaded machine also
    # slows the readers (at 300 KB/s, a full suite's load once read "predownload too low")
    proxy.reset(Fault("throttle", rate=100_000))
    try:
        report = _doctor(url.replace(f":{server.host_port[1]}/", f":{proxy.port}/"),
                         "--batch-size", "16", "--batches", "25", "--cpus", "2")
    finally:
        proxy.stop()
        server.stop()
    assert _verdicts(report)[0] == "network-bound"
    assert "too few workers" not in _verdicts(report)  # waiting is not counted as decoding
    assert report["metrics"]["decode_seconds"] < report["metrics"]["shard_wait_seconds"] / 4
    assert report["metrics"]["shard_waits"] >= 1
    assert report["metrics"]["fetch_by_scheme"]["http"]["bytes"] > 0


def test_the_text_report_names_stages_and_verdict(slow_dataset):
    result = CliRunner().invoke(cli, ["doctor", slow_dataset, "--batches", "5", "--cpus", "2"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "waiting for shards" in result.output and "verdict:" in result.output


@pytest.mark.parametrize("workers", ["0", "2"])
def test_arrays_of_varied_shapes_and_images_are_measured_as_lists(tmp_path, workers):
    """`default_collate` cannot batch them: doctor failed with a worker's traceback (or "Pass
    a collate_fn", which it has no option for); it measures with batches kept as lists."""
    from PIL import Image

    rng = np.random.default_rng(0)
    with MDSWriter(out=str(tmp_path / "d"), columns={"a": "ndarray:float32", "im": "png"},
                   size_limit=40_000) as writer:
        for i in range(60):
            writer.write({"a": rng.random(1 + i % 7, dtype=np.float32),
                          "im": Image.new("L", (4 + i % 3, 4))})
    report = _doctor(str(tmp_path / "d"), "--batch-size", "8", "--batches", "5",
                     "--workers", workers, "--cpus", "2")
    assert report["collate"] == "list" and report["samples"] == 40 and report["batches"] == 5
    text = CliRunner().invoke(cli, ["doctor", str(tmp_path / "d"), "--batches", "2",
                                    "--workers", workers], catch_exceptions=False)
    assert text.exit_code == 0, text.output
    assert "batches kept as lists of samples" in text.output


def test_impossible_settings_fail_clearly(slow_dataset, tmp_path):
    for args in (["--batches", "0"], ["--batch-size", "0"], ["--cpus", "0"]):
        result = CliRunner().invoke(cli, ["doctor", slow_dataset, *args])
        assert result.exit_code == 2 and "Invalid value" in result.output
    result = CliRunner().invoke(cli, ["doctor", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "Error:" in result.output


def _report(**metrics: float) -> dict[str, Any]:
    base = {"samples": 1000, "fetches": 10, "fetch_bytes": 10_000_000,
            "fetch_bytes_per_second": 1e6, "prefetch_concurrency": 1, "shard_wait_seconds": 0.0,
            "decode_seconds": 0.0, "evictions": 0, "refetches": 0}
    return {"metrics": {**base, **metrics}, "wall_seconds": 10.0, "workers": 2, "cpus": 8,
            "shard_bytes_mean": 8e6, "sample_bytes_mean": 1e4}


def test_diagnose_rules():
    assert [f.verdict for f in diagnose(_report(shard_wait_seconds=12.0))] == ["network-bound"]
    fast = _report(shard_wait_seconds=12.0, fetch_bytes_per_second=1e9)
    assert [f.verdict for f in diagnose(fast)] == ["predownload too low"]
    assert [f.verdict for f in diagnose(_report(decode_seconds=15.0))] == ["too few workers"]
    busy = {**_report(decode_seconds=15.0), "cpus": 2}
    assert [f.verdict for f in diagnose(busy)] == ["decode-bound"]
    thrash = _report(evictions=5, refetches=3)
    assert [f.verdict for f in diagnose(thrash)] == ["cache thrashing"]
    small = {**_report(fetches=50), "shard_bytes_mean": 1e5}
    assert [f.verdict for f in diagnose(small)] == ["shards too small"]
    assert [f.verdict for f in diagnose(_report())] == ["no loader bottleneck found"]
