"""What the Ray and Dask adapters share: shard grouping, the commit, the install hints, and the
reference (mosaicml-streaming 0.13) reading what both engines wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, strategies as st

from streaming.convert.columns import ConversionError
from streaming.convert.shard_groups import columnize, group_shards
from streaming.convert.subsets import SubsetResult, check_columns, commit, plan_write
from tests.convert.conftest import REPO

REFERENCE = os.environ.get("STREAMING_REFERENCE_PYTHON")


@given(st.lists(st.integers(0, 50), min_size=1, max_size=40), st.integers(1, 60))
def test_groups_cover_every_shard_once_in_order(samples: list[int], groups: int) -> None:
    found = group_shards(samples, groups)
    assert [s for g in found for s in g] == list(range(len(samples)))
    assert 1 <= len(found) <= min(groups, len(samples)) and all(found)


def test_groups_balance_samples() -> None:
    sizes = [s for g in group_shards([10] * 12, 4) for s in [sum(10 for _ in g)]]
    assert sizes == [30, 30, 30, 30]


def test_columnize_keeps_types() -> None:
    samples = [{"a": i, "v": np.full(3, i, np.int16), "r": np.arange(i + 1), "s": f"x{i}"}
               for i in range(3)]
    cols = columnize(samples, ["a", "v", "r", "s"])
    assert cols["a"].dtype == np.int64 and cols["v"].shape == (3, 3)
    assert cols["r"].dtype == object and [len(r) for r in cols["r"]] == [1, 2, 3]
    assert cols["s"].tolist() == ["x0", "x1", "x2"]
    with pytest.raises(ConversionError, match="no column 'zz'"):
        columnize(samples, ["zz"])


def test_column_differences_are_named() -> None:
    with pytest.raises(ConversionError, match="column 'x' is str in task 2 but int64"):
        check_columns({"x": "str"}, {"x": "int64"}, "task 2")
    with pytest.raises(ConversionError, match="task 1 lacks column 'y'"):
        check_columns({"x": "str"}, {"x": "str", "y": "int"}, "task 1")


def test_commit_refuses_an_empty_job_and_keeps_the_old_index(tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    plan = plan_write(out, exist_ok=False, writer_kwargs={"compression": None})
    with pytest.raises(ConversionError, match="no rows"):
        commit(plan, [None, None])
    assert not os.path.exists(os.path.join(out, "index.json"))
    with pytest.raises(ValueError, match="Invalid Writer argument"):
        plan_write(str(tmp_path / "b"), exist_ok=False, writer_kwargs={"bogus": 1})
    with pytest.raises(ValueError, match="'columns' is set by the converter"):
        plan_write(str(tmp_path / "c"), exist_ok=False, writer_kwargs={"columns": {}})
    with pytest.raises(ValueError, match="'keep_local' does not apply here: .* scratch folder"):
        plan_write(str(tmp_path / "d"), exist_ok=False, writer_kwargs={"keep_local": True})
    missing = SubsetResult(0, "00000000-00000-000000", os.path.join(out, "nope", "index.json"),
                           1, {"id": "int"})
    with pytest.raises(FileNotFoundError):
        commit(plan, [missing])
    assert not os.path.exists(os.path.join(out, "index.json"))


@pytest.mark.parametrize("engine,extra", [("ray", "ray"), ("dask", "dask")])
def test_without_the_engine_the_import_error_says_what_to_install(engine: str,
                                                                  extra: str) -> None:
    code = (f"import sys; sys.modules[{engine!r}] = None\n"
            f"try:\n    import streaming.convert.{engine}\n"
            "except ImportError as err:\n    print(err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         timeout=120)
    assert f"pip install 'shardstream[{extra}]'" in out.stdout, out.stderr


_READ_IDS = """
import json, sys
from streaming import StreamingDataset
ds = StreamingDataset(local=sys.argv[1], batch_size=1)
print(json.dumps(sorted(int(ds[i]["id"]) for i in range(len(ds)))))
"""


@pytest.mark.slow
@pytest.mark.reference
def test_reference_reads_what_ray_and_dask_wrote(ray_runtime: Any, dask_client: Any,
                                                 tmp_path: Any) -> None:
    if not REFERENCE:
        pytest.skip("set STREAMING_REFERENCE_PYTHON to an interpreter with mosaicml-streaming")
    import dask.dataframe as dd
    import pandas as pd

    from streaming.convert.dask import to_mds
    from streaming.convert.ray import write_mds

    write_mds(ray_runtime.data.range(120, override_num_blocks=3), str(tmp_path / "ray"),
              hashes=["sha1", "xxh64"], size_limit=1 << 10)
    to_mds(dd.from_pandas(pd.DataFrame({"id": np.arange(90), "t": ["x"] * 90}), npartitions=3),
           str(tmp_path / "dask"), compression="zstd")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for name, count in (("ray", 120), ("dask", 90)):
        proc = subprocess.run([REFERENCE, "-c", _READ_IDS, str(tmp_path / name)],
                              capture_output=True, text=True, env=env, cwd=str(tmp_path),
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == list(range(count))


def test_a_rerun_after_a_dead_job_commits_only_its_own_subsets(tmp_path: Any) -> None:
    import pyarrow as pa

    from streaming.convert.subsets import write_subset
    from tests.convert.convert_helpers import read_back

    out = tmp_path / "out"
    dead = out / "deadbeef-00003-abcdef"  # what a killed driver's task left: shards, no index
    dead.mkdir(parents=True)
    (dead / "shard.00000.mds").write_bytes(b"half")
    (out / "notes").mkdir()  # not ours: never touched
    plan = plan_write(str(out), exist_ok=False, writer_kwargs={"compression": None})
    results = [write_subset(plan, i, [pa.table({"id": list(range(10 * i, 10 * i + 10))})], None)
               for i in range(2)]
    report = commit(plan, [results[1], None, results[0]])  # any order in, task order out
    assert [p.split("-")[1] for p in report.partitions] == ["00000", "00001"]
    assert sorted(int(s["id"]) for s in read_back(str(out))) == list(range(20))
    assert not dead.exists() and (out / "notes").exists()
