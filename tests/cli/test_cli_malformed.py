"""Commands given malformed input: one line naming what is wrong, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.cli.conftest import one_error


@pytest.mark.parametrize("samples", ["abc", None, "1e3", [1]])
def test_validate_reports_a_malformed_sample_count_as_that_shards_problem(
        cli: Callable, dataset: str, samples: Any) -> None:
    index = json.load(open(f"{dataset}/index.json"))
    index["shards"][1]["samples"] = samples
    json.dump(index, open(f"{dataset}/index.json", "w"))
    run = cli("validate", dataset, "--no-progress")
    assert run.code == 1 and "Traceback" not in run.err, run.err
    assert "shard.00001.mds: IndexFormatError" in run.out and "malformed" in run.out, run.out


def test_convert_names_a_parquet_file_that_is_not_parquet(cli: Callable, tmp_path: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"id": [1, 2, 3]}), folder / "good.parquet")
    (folder / "bad.parquet").write_bytes((folder / "good.parquet").read_bytes()[:-10])
    one_error(cli("convert", "--no-progress", str(folder), str(tmp_path / "out")),
               "bad.parquet is not a Parquet file")
    (tmp_path / "a.jsonl").write_text('{"a": 1}\n')
    one_error(cli("convert", "--no-progress", "--format", "parquet", str(tmp_path / "a.jsonl"),
                   str(tmp_path / "out2")), "a.jsonl is not a Parquet file")


@pytest.mark.parametrize("command", ["inspect", "validate", "plan"])
def test_a_password_in_the_url_never_reaches_the_output(cli: Callable, command: str) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"sftp://user:s3cr3t@127.0.0.1:{port}/data"
    extra = ["--batch-size", "4"] if command == "plan" else []
    run = cli(command, url, *extra)
    assert run.code == 1 and "Traceback" not in run.err, run.err
    assert "s3cr3t" not in run.out + run.err and f"sftp://user@127.0.0.1:{port}/data" in run.err


def test_progress_counts_small_totals_in_whole_samples(capsys: pytest.CaptureFixture) -> None:
    from streaming.progress import make_progress

    with make_progress(True, 200, desc="small") as bar:
        bar(50)
    with make_progress(True, 200_000, desc="large") as bar:
        bar(50_000)
    with make_progress(True, None, desc="unknown") as bar:
        bar(5)
    err = capsys.readouterr().err
    assert "50/200" in err and "0.00/200 " not in err  # not tqdm's "0.00/200"
    assert "50.0k/200k" in err
    assert "unknown: 5sample" in err and "5.00sample" not in err
