"""End-to-end properties of single-process iteration over random small datasets and configs.

Each example writes a fresh MDS dataset (1-200 samples valued by their id, 1-20 per shard, raw or
zstd) and checks that iterating a `StreamingDataset` yields exactly the planner's order, covers
the data as promised, is deterministic, changes between epochs and resumes exactly.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from streaming import StreamingDataset
from streaming.base.batching import generate_work
from streaming.order.world import World
from tests.dataset.conftest import write_ints

ALGOS = ["naive", "py1s", "py2s", "py1br", "py1e", "py1b"]
EMPTY_NODE = "The number of samples assigned to a canonical node is 0"

SETTINGS = settings(max_examples=20, deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def shard_bytes(compression: str | None) -> tuple[int, int]:
    """(fixed bytes, bytes per sample) of a raw MDS shard of our int samples."""
    sizes = []
    for count in (1, 2):
        out = tempfile.mkdtemp()
        shutil.rmtree(out)
        write_ints(out, range(count), size_limit=None, compression=compression)
        with open(os.path.join(out, "index.json")) as f:
            sizes.append(json.load(f)["shards"][0]["raw_data"]["bytes"])
        shutil.rmtree(out)
    return 2 * sizes[0] - sizes[1], sizes[1] - sizes[0]


def size_limit_for(per_shard: int, compression: str | None) -> int:
    fixed, per_sample = shard_bytes(compression)
    return fixed + per_shard * per_sample


@dataclass(frozen=True)
class Layout:
    num_samples: int
    per_shard: int
    compression: str | None


@dataclass(frozen=True)
class Config:
    shuffle: bool
    shuffle_algo: str
    num_canonical_nodes: int
    batch_size: int
    shuffle_seed: int
    shuffle_block_size: int | None
    epoch_size: int | None

    def kwargs(self) -> dict[str, Any]:
        return asdict(self)


layouts = st.builds(Layout, st.integers(1, 200), st.integers(1, 20),
                    st.sampled_from([None, "zstd"]))


@st.composite
def configs(draw: st.DrawFn, num_samples: int) -> Config:
    return Config(
        shuffle=draw(st.booleans()),
        shuffle_algo=draw(st.sampled_from(ALGOS)),
        num_canonical_nodes=draw(st.integers(1, 4)),
        batch_size=draw(st.integers(1, 8)),
        shuffle_seed=draw(st.integers(0, 2**31 - 1)),
        # py1br needs a block of at least 2 (1 makes numpy raise `high <= 0`, as in the reference)
        shuffle_block_size=draw(st.none() | st.integers(2, 64)),
        epoch_size=draw(st.none() | st.integers(1, 2 * num_samples)),
    )


class Scratch:
    """Fresh directories for one example, removed afterwards."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="props_")
        self.count = 0

    def path(self, name: str) -> str:
        self.count += 1
        return os.path.join(self.root, f"{name}{self.count}")

    def remote(self, layout: Layout) -> str:
        return write_ints(self.path("remote"), range(layout.num_samples),
                          size_limit=size_limit_for(layout.per_shard, layout.compression),
                          compression=layout.compression)


@contextmanager
def scratch() -> Iterator[Scratch]:
    dirs = Scratch()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # partition/shuffle-quality warnings are expected
            yield dirs
    finally:
        shutil.rmtree(dirs.root, ignore_errors=True)


def epoch_values(ds: StreamingDataset, limit: int | None = None) -> list[int]:
    out = []
    for sample in ds:
        out.append(int(sample["v"]))
        if limit is not None and len(out) == limit:
            break
    return out


def planned(ds: StreamingDataset, epoch: int) -> list[int]:
    """The planner's order for a single process (resolved defaults taken from `ds`)."""
    work = generate_work(ds.batching_method, ds, World(1, 1, 1, 0), epoch, 0)
    flat = work.reshape(-1)
    return flat[flat >= 0].tolist()


def expects_empty_node(layout: Layout, config: Config) -> bool:
    """py1e refuses a canonical node with no samples (documented error)."""
    size = config.epoch_size or layout.num_samples
    return config.shuffle and config.shuffle_algo == "py1e" and size < config.num_canonical_nodes


def open_ds(dirs: Scratch, remote: str, config: Config) -> StreamingDataset:
    return StreamingDataset(remote=remote, local=dirs.path("cache"), **config.kwargs())


@st.composite
def cases(draw: st.DrawFn) -> tuple[Layout, Config]:
    layout = draw(layouts)
    return layout, draw(configs(layout.num_samples))


@SETTINGS
@given(case=cases())
def test_iteration_follows_the_plan(case: tuple[Layout, Config]) -> None:
    layout, config = case
    with scratch() as dirs:
        remote = dirs.remote(layout)
        with open_ds(dirs, remote, config) as ds:
            assert ds.samples_per_shard[:-1].tolist() == [layout.per_shard] * (ds.num_shards - 1)
            if expects_empty_node(layout, config):
                with pytest.raises(ValueError, match=EMPTY_NODE):
                    epoch_values(ds)
                return
            got = epoch_values(ds)
            assert got == planned(ds, 0)
            check_coverage(got, layout, config)
            second = epoch_values(ds)
            assert second == planned(ds, 1)
            assert len(second) == len(got)
            if config.epoch_size is None and layout.num_samples % config.num_canonical_nodes == 0:
                # same samples (no padding repeats, which are drawn per epoch), new order
                assert Counter(second) == Counter(got)
            if config.shuffle and config.shuffle_algo in ("naive", "py1e") \
                    and layout.num_samples >= 50 and config.epoch_size is None:
                assert second != got
        with open_ds(dirs, remote, config) as again:
            assert epoch_values(again) == got  # determinism in a fresh dataset


def check_coverage(got: list[int], layout: Layout, config: Config) -> None:
    n, c = layout.num_samples, config.num_canonical_nodes
    counts = Counter(got)
    assert set(counts) <= set(range(n))
    # one process: every canonical node is padded (by repeats) to ceil(size / c) samples
    assert len(got) == c * math.ceil((config.epoch_size or n) / c)
    if config.epoch_size in (None, n):
        assert set(counts) == set(range(n)), "every sample appears at least once"
        if n % c == 0:
            assert sorted(got) == list(range(n)), "every sample exactly once"
    elif config.epoch_size % c == 0:
        size = config.epoch_size
        assert len(got) == size
        assert set(counts.values()) <= {size // n, size // n + 1}
        assert len(counts) == min(n, size)


@SETTINGS
@given(case=cases(), data=st.data())
def test_resume_yields_exactly_the_remainder(case: tuple[Layout, Config],
                                             data: st.DataObject) -> None:
    layout, config = case
    if expects_empty_node(layout, config):
        return
    with scratch() as dirs:
        remote = dirs.remote(layout)
        with open_ds(dirs, remote, config) as ds:
            full = epoch_values(ds)
        stop = data.draw(st.integers(0, len(full)), label="stop")
        with open_ds(dirs, remote, config) as ds:
            head = epoch_values(ds, limit=stop) if stop else []
            state = ds.state_dict(stop, False)
        assert head == full[:stop]
        assert state["epoch"] == (0 if stop else -1)
        assert state["sample_in_epoch"] == stop
        with open_ds(dirs, remote, config) as resumed:
            # Every position up to the end of the padded epoch resumes, the end itself too
            # (the reference refuses positions past its size plus the rank padding).
            resumed.load_state_dict(state)
            assert epoch_values(resumed) == full[stop:]
            assert epoch_values(resumed) == planned(resumed, 1)  # then a normal epoch 1


@pytest.mark.parametrize("algo", ALGOS)
def test_epoch_orders_differ(algo: str) -> None:
    """Shuffled epochs are new permutations of the same samples (every algo, 60 samples)."""
    layout = Layout(60, 7, None)
    config = Config(True, algo, 2, 4, 17, 20, None)
    with scratch() as dirs, open_ds(dirs, dirs.remote(layout), config) as ds:
        epochs = [epoch_values(ds) for _ in range(3)]
    assert all(sorted(e) == list(range(60)) for e in epochs)
    assert epochs[0] != epochs[1] != epochs[2]


def test_empty_canonical_node_error_is_the_documented_one() -> None:
    with scratch() as dirs:
        remote = dirs.remote(Layout(1, 1, None))
        config = Config(True, "py1e", 2, 1, 0, None, None)
        with open_ds(dirs, remote, config) as ds, pytest.raises(ValueError, match=EMPTY_NODE):
            epoch_values(ds)


def test_shard_sizes_helper_matches_writer() -> None:
    for compression in (None, "zstd"):
        for per_shard in (1, 3, 20):
            with scratch() as dirs:
                layout = Layout(2 * per_shard + 1, per_shard, compression)
                with open_ds(dirs, dirs.remote(layout), Config(False, "py1e", 1, 1, 0, None,
                                                               None)) as ds:
                    assert ds.samples_per_shard.tolist() == [per_shard, per_shard, 1]


def test_stream_numbers_keep_the_type_they_were_given() -> None:
    """The reference keeps a `Stream`'s numbers as given; ours turned `repeat=2` into 2.0,
    which shows in every log and f-string that prints it."""
    from streaming import Stream

    assert repr(Stream(local="/tmp/ss-types-a", repeat=2).repeat) == "2"
    assert repr(Stream(local="/tmp/ss-types-b", proportion=1).proportion) == "1"
    assert repr(Stream(local="/tmp/ss-types-c", download_timeout=10).download_timeout) == "10"
    assert Stream(local="/tmp/ss-types-d", proportion=0.5).proportion == 0.5
