"""`streaming inspect`, `head`, `validate` and `bench`, end to end through `python -m streaming`."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from typing import Any

from streaming.format.compression import compress, decompress


def test_inspect_reads_only_the_index_local_and_remote(cli: Callable, dataset: str,
                                                      tmp_path: Any) -> None:
    text = cli("inspect", dataset)
    assert text.code == 0 and "samples      30" in text.out and "zstd" in text.out
    remote = tmp_path / "index_only"
    remote.mkdir()
    shutil.copy(f"{dataset}/index.json", remote)  # no shards: inspect must not need them
    info = cli("inspect", f"file://{remote}", "--json").json()
    assert info["samples"] == 30 and info["shards"] == 3 and info["hashes"] == ["sha1", "xxh64"]
    assert info["columns"] == {"blob": "bytes", "id": "int", "text": "str",
                               "tokens": "ndarray:int32"}
    assert info["shard_list"][0]["zip_data"] == "shard.00000.mds.zstd"
    assert "sha1=" in cli("inspect", dataset, "--shards").out
    missing = cli("inspect", str(tmp_path / "nothing"))
    assert missing.code == 1 and "no index.json" in missing.err


def test_inspect_counts_the_compressed_part_of_a_merged_index(cli: Callable,
                                                               tmp_path: Any) -> None:
    """A merged index of a plain and a compressed part said "- compressed"."""
    from streaming import MDSWriter
    from streaming.merge import merge_index

    root = tmp_path / "merged"
    for part, compression in enumerate([None, "zstd"]):
        with MDSWriter(out=str(root / f"p{part}"), columns={"id": "int"},
                       compression=compression, size_limit=200) as writer:
            for i in range(20):
                writer.write({"id": i})
    merge_index(str(root))
    info = cli("inspect", str(root), "--json").json()
    zipped = [s["zip_bytes"] for s in info["shard_list"] if s["zip_bytes"] is not None]
    assert 0 < len(zipped) < info["shards"] == len(info["shard_list"])
    assert info["zip_bytes"] == sum(zipped) and info["compressed_shards"] == len(zipped)
    assert f"compressed ({len(zipped)} of {info['shards']} shards)" in cli("inspect",
                                                                           str(root)).out


def test_head_prints_json_with_bytes_summarised(cli: Callable, dataset: str) -> None:
    run = cli("head", f"file://{dataset}", "-n", "12")
    lines = [json.loads(line) for line in run.out.splitlines()]
    assert run.code == 0 and len(lines) == 12  # spans two shards
    assert lines[11]["blob"] == {"bytes": 40, "head": "0b" * 8 + "..."}
    assert lines[11]["id"] == 11 and lines[11]["tokens"] == [0, 1, 2, 3]
    assert cli("head", dataset, "-n", "2", "--json").json()["samples"][1]["text"] == "sample 1"
    assert cli("head", dataset, "-n", "-1").code == 2  # usage error


def test_validate_passes_then_names_the_broken_shard_and_sample(cli: Callable, dataset: str,
                                                                tmp_path: Any) -> None:
    good = cli("validate", dataset, "--json", "--workers", "2")
    report = good.json()
    assert good.code == 0 and report["ok"] and report["samples"] == 30
    assert report["digests"] == 12  # 3 shards x (zip + raw) x 2 algorithms
    index = json.load(open(f"{dataset}/index.json"))
    first = index["shards"][0]
    path = f"{dataset}/{first['zip_data']['basename']}"
    with open(path, "rb") as file:
        raw = bytearray(decompress("zstd", file.read()))
    # Corrupt sample 2's text (an invalid UTF-8 byte) and make the digests agree again, so
    # only decoding can find it.
    at = raw.index(b"sample 2")
    raw[at] = 0xFF
    packed = compress("zstd", bytes(raw))
    with open(path, "wb") as file:
        file.write(packed)
    from streaming.hashing import get_hash

    first["zip_data"].update(bytes=len(packed), hashes={a: get_hash(a, packed)
                                                        for a in ("sha1", "xxh64")})
    first["raw_data"]["hashes"] = {a: get_hash(a, bytes(raw)) for a in ("sha1", "xxh64")}
    json.dump(index, open(f"{dataset}/index.json", "w"))
    bad = cli("validate", dataset, "--no-progress")
    assert bad.code == 1 and "shard.00000.mds sample 2: column 'text'" in bad.out
    os.remove(f"{dataset}/shard.00001.mds.zstd")
    missing = cli("validate", dataset, "--json")
    problems = missing.json()["problems"]
    assert missing.code == 1 and any(p["shard"] == "shard.00001.mds" for p in problems)


def test_bench_reports_throughput(cli: Callable, dataset: str) -> None:
    result = cli("bench", dataset, "--workers", "2", "--json").json()
    assert result["samples"] == 30 and result["samples_per_s"] > 0
    assert result["first_sample_ms"] > 0 and result["workers"] == 2
    assert "samples/s" in cli("bench", dataset, "--limit", "5").out
    assert cli("bench", dataset, "--workers", "0").code == 2


def test_head_and_bench_name_a_corrupt_shard_instead_of_a_traceback(
        cli: Callable, dataset: str) -> None:
    """A truncated zstd shard: `validate` said so, while `head` and `bench` ended in
    zstd.Error's traceback. A missing shard was named by its scratch copy's path."""
    path = f"{dataset}/shard.00000.mds.zstd"
    with open(path, "rb") as file:
        data = file.read()
    with open(path, "wb") as file:
        file.write(data[:40])
    for command in ("head", "bench"):
        run = cli(command, dataset)
        assert run.code == 1 and "Traceback" not in run.err, run.err
        assert "shard.00000.mds.zstd cannot be decompressed as zstd" in run.err
    os.remove(path)
    for command in ("head", "bench"):
        run = cli(command, dataset)
        assert run.code == 1 and "Traceback" not in run.err, run.err
        assert f"shard.00000.mds is missing from {dataset}" in run.err


def test_validate_counts_every_bad_sample_beyond_those_it_lists(cli: Callable,
                                                                 tmp_path: Any) -> None:
    """The "N more problems" note counted as one problem (21 said for ~100), the JSON had no
    total, and samples past 50 bad ones in a block went uncounted."""
    import json as json_module

    from streaming import MDSWriter

    out = str(tmp_path / "ds")
    with MDSWriter(out=out, columns={"t": "json"}) as writer:
        for _ in range(200):
            writer.write({"t": {"k": "v" * 20}})
    path = os.path.join(out, "shard.00000.mds")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    for i in range(len(data) // 2, len(data), 7):
        data[i] = 0xFF
    with open(path, "wb") as f:
        f.write(data)
    run = cli("validate", "--no-progress", out)
    *_, more, verdict = run.out.strip().splitlines()
    decoded = int(verdict.split(", ")[1].split()[0])
    count = int(verdict.split()[0].replace(",", ""))
    assert run.code == 1 and decoded + count == 200, run.out
    assert more == f"shard.00000.mds: {count - 20:,} more problem(s) not listed"
    report = json_module.loads(cli("validate", "--no-progress", "--json", out).out)
    assert report["problem_count"] == count and len(report["problems"]) == 20
