"""Hypothesis: a Parquet folder read in place follows the planner exactly, like MDS does.

Random folders (files, row groups, shard targets) and random order configurations: iterating
yields exactly the planner's sample ids (so every row once per epoch when the planner says so),
and resuming mid-epoch yields exactly the rest.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections import Counter

from hypothesis import HealthCheck, given, settings, strategies as st

from streaming import StreamingDataset, index_parquet
from tests.dataset.test_properties import Config, configs, planned
from tests.parquet.parquet_data import write_folder

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, int, int, int, Config]:
    rows = draw(st.integers(20, 300))
    files = draw(st.integers(1, 4))
    group = draw(st.integers(3, 60))
    target = draw(st.sampled_from([1, 4000, 1 << 30]))  # a shard per group, some, per file
    config = draw(configs(rows))
    if config.shuffle and config.shuffle_algo == "py1e":
        config = Config(**{**config.kwargs(), "epoch_size": None})  # never an empty node
    return rows, files, group, target, config


@SETTINGS
@given(case=cases())
def test_in_place_iteration_follows_the_plan_and_resumes(case) -> None:
    rows, files, group, target, config = case
    root = tempfile.mkdtemp(prefix="pqprops_")
    try:
        folder = write_folder(f"{root}/d", rows, files=files, row_group=group,
                              columns=["id", "name"])
        index_parquet(folder, shard_bytes=target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with StreamingDataset(remote=folder, local=f"{root}/c", **config.kwargs()) as ds:
                got = [s["id"] for s in ds]
                assert got == planned(ds, 0)
                if config.epoch_size is None:
                    assert set(got) == set(range(rows))
                    if rows % config.num_canonical_nodes == 0:
                        assert Counter(got) == Counter(range(rows))
                for s in got[:5]:
                    assert ds[s]["name"] == f"row-{s}"
            stop = len(got) // 2
            with StreamingDataset(remote=folder, local=f"{root}/c2", **config.kwargs()) as ds:
                ds.load_state_dict({"epoch": 0, "sample_in_epoch": stop,
                                    "num_canonical_nodes": ds.num_canonical_nodes,
                                    "shuffle_seed": config.shuffle_seed,
                                    "initial_physical_nodes": 1})
                assert [s["id"] for s in ds] == got[stop:]
    finally:
        shutil.rmtree(root, ignore_errors=True)
