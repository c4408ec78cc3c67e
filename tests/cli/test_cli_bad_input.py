"""What the commands say about input they cannot use: one `Error:` line and a non-zero exit,
never a traceback; strict JSON; and `pkl` columns decoded only with the user's leave.

Each case was found by using the commands as a user would (each used to end in a traceback,
print invalid JSON, accept what the dataset refuses, or write into the user's folder).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from streaming import MDSWriter, Stream
from streaming.errors import ShardFormatError
from streaming.format import load_readers
from tests.cli.conftest import one_error


def _strict(text: str) -> Any:
    def refuse(token: str) -> None:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def _write(out: str, columns: dict[str, str], samples: list[dict[str, Any]],
           **kwargs: Any) -> str:
    with MDSWriter(out=out, columns=columns, **kwargs) as writer:
        for sample in samples:
            writer.write(sample)
    return out


def test_plan_and_simulate_refuse_an_empty_stream_and_the_weights_a_stream_refuses(
        cli: Callable, tmp_path: Any) -> None:
    empty = _write(str(tmp_path / "empty"), {"a": "int"}, [])
    one_error(cli("plan", empty, "--batch-size", "4"), "empty", "contains no samples")
    one_error(cli("plan", "--shard-sizes", "0", "--batch-size", "4"), "contains no samples")
    one_error(cli("plan", "--shard-sizes", "10", "--repeat", "inf", "--batch-size", "4"),
               "`repeat` must be a finite number")
    one_error(cli("simulate", "--synthetic", "10,10,1000", "--repeat", "inf", "--batch-size",
                   "4"), "`repeat` must be a finite number")
    # Stream(proportion=-1) refuses; the plan used to print one and exit 0, and with two
    # streams blamed `choose`.
    one_error(cli("plan", "--shard-sizes", "10", "--proportion", "-1", "--batch-size", "4"),
               "`proportion` must be non-negative")
    one_error(cli("plan", "--shard-sizes", "10", "--shard-sizes", "10", "--proportion", "-1,2",
                   "--batch-size", "4"), "`proportion` must be non-negative")
    one_error(cli("simulate", "--synthetic", "10,10,1000", "--proportion", "-1",
                   "--batch-size", "4"), "`proportion` must be non-negative")


@pytest.mark.parametrize("weight", ["proportion", "repeat"])
@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_a_stream_refuses_a_weight_that_is_not_a_finite_number(weight: str,
                                                               value: float) -> None:
    with pytest.raises(ValueError, match=f"`{weight}` must be a finite number"):
        Stream(local="/nowhere", **{weight: value})


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_server_or_a_folder_named_index_json_is_one_line(
        cli: Callable, tmp_path: Any) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/data"
    for command in ("inspect", "head", "validate"):
        one_error(cli(command, url),
                   "cannot read the index of", url)
    (tmp_path / "odd" / "index.json").mkdir(parents=True)
    for command in ("inspect", "head", "validate"):
        one_error(cli(command, str(tmp_path / "odd")), "Is a directory")


def test_head_writes_strict_json_for_nan_infinity_and_dates(cli: Callable,
                                                            tmp_path: Any) -> None:
    data = _write(str(tmp_path / "odd"), {"f": "float32", "g": "float16", "d": "pkl"},
                  [{"f": np.float32("nan"), "g": np.float16("inf"), "d": np.datetime64(
                      "2020-01-02T03:04:05")}])
    text = cli("head", data, "--allow-unsafe-types")
    assert text.code == 0, text.err
    assert _strict(text.out) == {"f": "NaN", "g": "Infinity", "d": "2020-01-02T03:04:05"}
    as_json = cli("head", data, "--allow-unsafe-types", "--json")
    assert _strict(as_json.out)["samples"] == [{"f": "NaN", "g": "Infinity",
                                                "d": "2020-01-02T03:04:05"}]


def test_commands_decode_pickles_only_when_allowed(cli: Callable, tmp_path: Any) -> None:
    data = _write(str(tmp_path / "pkl"), {"a": "int", "p": "pkl"},
                  [{"a": i, "p": [i]} for i in range(20)])
    for args in (("head", data), ("bench", data),
                 ("doctor", data, "--batch-size", "4", "--batches", "2")):
        one_error(cli(*args), "Column p contains an unsafe type: pkl", "--allow-unsafe-types")
        allowed = cli(*args, "--allow-unsafe-types")
        assert allowed.code == 0, allowed.err
    assert json.loads(cli("head", data, "--allow-unsafe-types", "-n", "1").out) == {
        "a": 0, "p": [0]}
    # validate checks the framing of every sample either way, and decodes the pickles only
    # when allowed, saying so.
    framed = cli("validate", data, "--no-progress")
    assert framed.code == 0 and "p (pkl) framed but not decoded" in framed.out
    assert cli("validate", data, "--json").json()["undecoded"] == ["p (pkl)"]
    decoded = cli("validate", data, "--no-progress", "--allow-unsafe-types")
    assert decoded.code == 0 and "not decoded" not in decoded.out
    assert "20 samples decoded" in decoded.out


def test_doctor_leaves_a_local_compressed_dataset_as_it_was(cli: Callable,
                                                            tmp_path: Any) -> None:
    data = _write(str(tmp_path / "zds"), {"b": "bytes"},
                  [{"b": bytes([i]) * 100} for i in range(200)], compression="zstd",
                  size_limit=5000)
    before = sorted(os.listdir(data))
    run = cli("doctor", data, "--batch-size", "4", "--batches", "30")
    assert run.code == 0, run.err
    assert sorted(os.listdir(data)) == before  # no decompressed copy left beside each shard
    report = cli("doctor", data, "--batch-size", "4", "--batches", "30", "--json").json()
    index = json.load(open(os.path.join(data, "index.json")))
    zipped = [shard["zip_data"]["bytes"] for shard in index["shards"]]
    raw = sum(shard["raw_data"]["bytes"] for shard in index["shards"])
    # What a request per shard moves (the zip), and what readers read per sample (raw bytes):
    # both used to count raw + zip.
    assert report["shard_bytes_mean"] == pytest.approx(sum(zipped) / len(zipped))
    assert report["sample_bytes_mean"] == pytest.approx(raw / 200)


def test_an_index_framing_a_column_at_another_size_than_its_encoding_is_caught(
        cli: Callable, tmp_path: Any) -> None:
    data = _write(str(tmp_path / "sizes"), {"a": "ndarray:float32:3"},
                  [{"a": np.full(3, i, np.float32)} for i in range(10)])
    path = os.path.join(data, "index.json")
    index = json.load(open(path))
    index["shards"][0]["column_encodings"] = ["ndarray:float64:3"]  # 24 bytes, framed as 12
    json.dump(index, open(path, "w"))
    with pytest.raises(ShardFormatError, match="'a' is ndarray:float64:3, which takes 24 "
                                               "bytes, but the index gives it 12 bytes"):
        load_readers(data)[0][0]
    report = cli("validate", data, "--no-progress")  # used to say OK, 10 samples decoded
    assert report.code == 1
    assert "shard.00000.mds: column 'a' is ndarray:float64:3, which takes 24" in report.out
    one_error(cli("head", data), "which takes 24 bytes")


def test_validate_names_a_shard_once_per_problem(cli: Callable, dataset: str) -> None:
    index = json.load(open(f"{dataset}/index.json"))
    name = index["shards"][0]["zip_data"]["basename"]
    index["shards"][0]["zip_data"]["hashes"]["sha1"] = "0" * 40
    json.dump(index, open(f"{dataset}/index.json", "w"))
    out = cli("validate", dataset, "--no-progress").out
    assert f"shard.00000.mds: {name}: sha1 digest" in out  # the compressed file: named
    raw = index["shards"][1]["raw_data"]
    raw["hashes"]["sha1"] = "0" * 40
    json.dump(index, open(f"{dataset}/index.json", "w"))
    out = cli("validate", dataset, "--no-progress").out
    assert "shard.00001.mds: sha1 digest" in out  # its own data file: not named again
    assert "shard.00001.mds: shard.00001.mds" not in out


def test_merge_index_failure_is_one_line_on_stderr(cli: Callable, tmp_path: Any) -> None:
    run = cli("merge-index", str(tmp_path / "nothing"))
    one_error(run, "no complete sub-dataset")
    assert run.out == ""  # no "Merged 0 sub-datasets into -"


def test_doctor_calls_a_bad_cache_limit_a_usage_error(cli: Callable, dataset: str) -> None:
    for command in (("doctor", dataset), ("simulate", dataset, "--batch-size", "4")):
        run = cli(*command, "--cache-limit", "xyz")
        assert run.code == 2 and "Invalid value for '--cache-limit'" in run.err


def test_bench_limit_counts_the_bytes_of_the_samples_read(cli: Callable, dataset: str) -> None:
    whole = cli("bench", dataset, "--json").json()
    part = cli("bench", dataset, "--json", "--limit", "2").json()
    assert part["samples"] == 2
    assert 0 < part["bytes"] < whole["bytes"] / 5  # 2 of a 10-sample shard, of 30 samples
    # The limit was split evenly over the workers: with more workers than shards (or shards of
    # unequal sizes) it read less than asked.
    for workers in ("2", "4"):
        assert cli("bench", dataset, "--json", "--limit", "25", "--workers",
                   workers).json()["samples"] == 25


def test_simulate_calls_a_run_that_takes_no_time_unbounded(cli: Callable) -> None:
    args = ("simulate", "--synthetic", "10,10,1000", "--batch-size", "4")
    text = cli(*args)
    assert text.code == 0 and "unbounded samples/s" in text.out
    assert _strict(cli(*args, "--json").out)["samples_per_second"] == "Infinity"
    timed = _strict(cli(*args, "--step-time", "1ms", "--json").out)
    assert 0 < timed["samples_per_second"] < 1e6


def test_convert_checks_writer_options_before_any_work(cli: Callable, tmp_path: Any) -> None:
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n{"x": 2}\n')
    for option, value, needle in (("--compression", "nope", "br, bz2, gz, snappy, zstd"),
                                  ("--hashes", "nope", "unknown digest"),
                                  ("--size-limit", "abc", "Unsupported value/suffix")):
        run = cli("convert", "--no-progress", str(tmp_path / "a.jsonl"), str(tmp_path / "o"),
                  option, value)
        assert run.code == 2 and f"Invalid value for '{option}'" in run.err and needle in run.err
        assert not os.path.exists(tmp_path / "o")
    run = cli("convert", "--no-progress", str(tmp_path / "a.jsonl"), str(tmp_path / "o"),
              "--hashes", "xxh64,sha1,xxh64")
    assert run.code == 0, run.err
    index = json.load(open(tmp_path / "o" / "index.json"))
    assert sorted(index["shards"][0]["raw_data"]["hashes"]) == ["sha1", "xxh64"]


def test_convert_finds_the_data_beside_a_metadata_json(cli: Callable, tmp_path: Any) -> None:
    """A folder of CSV files with a `metadata.json` (or an MDS index) beside them is CSV: a
    `.json` file is not taken for JSON lines when another format is there."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("x\n1\n2\n")
    (tmp_path / "data" / "metadata.json").write_text('{"source": "crawl"}')
    run = cli("convert", "--no-progress", str(tmp_path / "data"), str(tmp_path / "out"))
    assert run.code == 0, run.err
    assert json.load(open(tmp_path / "out" / "index.json"))["shards"][0]["samples"] == 2


def test_no_report_or_error_prints_a_password_of_a_url(capsys) -> None:
    """`convert`, `merge-index` and `doctor` printed `sftp://user:secret@host/...` as given
    (messages and `inspect` already redacted theirs): every report and error now goes
    through one redaction."""
    from streaming.cli.output import emit, fail

    data = {"remote": "sftp://alice:s3cret@127.0.0.1:2299/conv", "other": "s3://bucket/x"}
    emit(data, True, str)
    emit(data, False, lambda d: f"Wrote 5 samples to {d['remote']} and {d['other']}")
    with pytest.raises(SystemExit):
        fail("could not reach sftp://alice:s3cret@127.0.0.1:2299/conv")
    out, err = capsys.readouterr()
    assert "s3cret" not in out + err
    assert out.count("sftp://alice@127.0.0.1:2299/conv") == 2 and "s3://bucket/x" in out
    assert "sftp://alice@127.0.0.1:2299/conv" in err


def test_convert_to_an_out_no_store_takes_and_repeated_columns_are_one_line(
        cli: Callable, tmp_path: Any) -> None:
    """Each ended in a traceback: an OUT of an unknown scheme or a read-only store (the sink's
    ValueError) and a CSV naming a column twice (a KeyError from the schema)."""
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    one_error(cli("convert", str(tmp_path / "a.csv"), "foo://bucket/x", "--no-progress"),
              "foo")
    one_error(cli("convert", str(tmp_path / "a.csv"), "http://127.0.0.1:1/x", "--no-progress"),
              "read-only")
    (tmp_path / "d.csv").write_text("x,x\n1,2\n")
    one_error(cli("convert", str(tmp_path / "d.csv"), str(tmp_path / "o"), "--no-progress"),
              "column(s) ['x'] more than once")


def test_an_error_no_command_foresaw_is_one_line_unless_debugging(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from streaming.cli import main, read_commands

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("something nobody planned for\nsecond line")

    monkeypatch.setattr(read_commands, "open_source", broken, raising=False)
    monkeypatch.delenv("STREAMING_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["inspect", "/nowhere"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1
    assert err.strip().splitlines() == [
        "Error: RuntimeError: something nobody planned for (STREAMING_DEBUG=1 shows the "
        "traceback)"], err
    monkeypatch.setenv("STREAMING_DEBUG", "1")
    with pytest.raises(RuntimeError, match="nobody planned"):
        main(["inspect", "/nowhere"])


def test_json_errors_are_json_on_stdout(cli: Callable, tmp_path: Any) -> None:
    """A script reading `--json` output gets one document when the command fails too, with the
    exit code; the words stay on stderr. Before, stdout was empty and only stderr spoke."""
    missing = str(tmp_path / "missing")
    for run, code, needle in (
            (cli("inspect", missing, "--json"), 1, "no index.json"),  # a command's own `fail`
            (cli("inspect", "--json", "--bogus"), 2, "No such option"),  # usage: click's
            (cli("head", missing, "--json"), 1, "no index.json"),
            (cli("merge-index", missing, "--json"), 1, "no complete sub-dataset"),
    ):
        assert run.code == code, run.err
        document = _strict(run.out)
        assert document["exit_code"] == code and needle in document["error"], document
        assert needle in run.err and "Traceback" not in run.err
    plain = cli("inspect", missing)
    assert plain.out == "" and plain.code == 1  # without --json, stdout stays empty
    # What the command found before failing is in the one document (was a second one).
    assert _strict(cli("merge-index", missing, "--json").out)["merged"] == 0
