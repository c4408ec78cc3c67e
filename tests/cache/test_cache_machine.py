"""Stateful test of the node cache, driven through a real `StreamingDataset`.

Hypothesis interleaves random reads, prepares, evictions and shard files deleted behind the
dataset's back on a small local-folder remote (8-10 shards, raw or zstd, keep_zip on/off, with and
without a cache limit) and checks after every step that the shared accounting, the shard states
and the cache directory agree. Deterministic reproducers of the bugs it found close the file.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from streaming import StreamingDataset
from streaming.coord import ShardState
from tests.dataset.conftest import write_ints

NUM_SAMPLES = 40  # 8 (raw) or 10 (zstd) shards with size_limit=226
MAX_SHARDS = 16  # rules draw shard ids below this, taken modulo the real count
SHARD_NAME = re.compile(r"^shard\.\d{5}\.mds(\.zstd)?$")


@pytest.fixture(scope="module")
def remotes(tmp_path_factory: pytest.TempPathFactory) -> dict[str | None, str]:
    """One remote per compression, written once for the whole module."""
    out = {}
    for compression in (None, "zstd"):
        path = str(tmp_path_factory.mktemp(f"remote_{compression}"))
        shutil.rmtree(path)
        out[compression] = write_ints(path, range(NUM_SAMPLES), compression=compression)
    return out


def dir_bytes(local: str) -> int:
    return sum(os.path.getsize(os.path.join(local, name)) for name in os.listdir(local))


def small_limit(remote: str, local: str) -> int:
    """Index bytes + 3 of the largest shard (raw + zip), but at least the 4x-largest floor."""
    with StreamingDataset(remote=remote, local=local, batch_size=1) as probe:
        largest = max(shard.get_max_size() for shard in probe.shards)
    index_bytes = os.path.getsize(os.path.join(local, "index.json"))
    return max(index_bytes + 3 * largest, 4 * largest)


class CacheMachine(RuleBasedStateMachine):
    """Model: which shards were used when, and which were tampered with.

    Configured by class attributes on a per-test subclass: `remote`, `keep_zip`, `limited`
    (cache limit from `small_limit`), `max_tampers` (how many files the tamper rule may delete
    per run; 0 disables it) and `future` (the cache is given an epoch order and a reader's
    progress through it, so evictions must follow the next uses: Belady, recency among equals).
    """

    remote: str = ""
    keep_zip: bool = False
    limited: bool = False
    max_tampers: int = 0
    future: bool = False

    def __init__(self) -> None:
        super().__init__()
        self.local = tempfile.mkdtemp(prefix="cache_machine_")
        self.hidden = tempfile.mkdtemp(prefix="cache_machine_hidden_")
        self.ds: StreamingDataset | None = None
        self.num_shards = 0
        self.clock = 0
        self.last_use = np.full(MAX_SHARDS, -1, np.int64)
        # Shards whose files were deleted behind the cache's back -> the bytes deleted; the
        # cache may count them until it next looks at that shard (read, prepare, evict).
        self.unrepaired: dict[int, int] = {}
        self.tampers = 0

    @initialize(seed=st.integers(0, 2**16))
    def open_dataset(self, seed: int) -> None:
        limit = small_limit(self.remote, self.local) if self.limited else None
        self.ds = StreamingDataset(remote=self.remote, local=self.local, batch_size=1,
                                   keep_zip=self.keep_zip, cache_limit=limit)
        self.num_shards = self.ds.num_shards
        self.position = 0
        if self.future:
            order = np.random.default_rng(seed).permutation(NUM_SAMPLES)
            self.ds._ss_cache.set_epoch_order(order[None, :], self.ds.spanner.locate_many)
            self.ds._ss_cache.progress.numpy()[0] = 0
        assert self.num_shards <= MAX_SHARDS
        self.raw = [[os.path.join(self.local, raw.basename) for raw, _ in s.file_pairs]
                    for s in self.ds.shards]
        self.zips = [[os.path.join(self.local, z.basename) for _, z in s.file_pairs if z]
                     for s in self.ds.shards]

    def teardown(self) -> None:
        if self.ds is not None:
            self.ds.close()
        shutil.rmtree(self.local, ignore_errors=True)
        shutil.rmtree(self.hidden, ignore_errors=True)

    # ------------------------------------------------------------------------------ helpers

    def states(self) -> np.ndarray:
        assert self.ds is not None
        return self.ds._ss_cache.claims.states.numpy().copy()

    def local_set(self) -> set[int]:
        return set(np.flatnonzero(self.states() == ShardState.LOCAL).tolist())

    def raw_present(self, shard: int) -> bool:
        return all(os.path.isfile(p) for p in self.raw[shard])

    def complete(self, shard: int) -> bool:
        """Every file a LOCAL shard should have is there (the zip too when it is kept)."""
        return self.raw_present(shard) and (
            not self.keep_zip or all(os.path.isfile(p) for p in self.zips[shard]))

    def forget(self, shard: int) -> None:
        self.last_use[shard] = -1
        self.unrepaired.pop(shard, None)

    def after_use(self, shard: int, before: set[int], repairs: bool) -> None:
        """Checks after a read or prepare of `shard`: it is LOCAL, and whatever vanished
        meanwhile was colder than whatever stayed (least recently used eviction)."""
        assert self.states()[shard] == ShardState.LOCAL
        if repairs or shard not in self.unrepaired:
            assert self.raw_present(shard), f"shard {shard} LOCAL but its raw file is missing"
        if self.complete(shard):
            self.unrepaired.pop(shard, None)
        self.clock += 1
        self.last_use[shard] = self.clock
        after = self.local_set()
        evicted = before - after
        if not self.limited:
            assert not evicted, f"evicted {evicted} without a cache limit"
        survivors = (after & before) - {shard}
        next_use = self.ds._ss_cache.next_uses() if self.future else None
        if evicted and survivors and next_use is not None:
            for victim in evicted:  # needed later, or as soon and colder, than every survivor
                for kept in survivors:
                    assert (next_use[victim], -self.last_use[victim]) > (
                        next_use[kept], -self.last_use[kept]), (
                        f"evicted {victim} (next use {next_use[victim]}) but kept {kept} "
                        f"(next use {next_use[kept]}); last uses {self.last_use}")
        elif evicted and survivors:
            assert max(self.last_use[sorted(evicted)]) < min(self.last_use[sorted(survivors)]), (
                f"evicted {evicted} but kept colder {survivors} ({self.last_use})")
        for victim in evicted:
            self.forget(victim)

    # ------------------------------------------------------------------------------ rules

    @rule(sample=st.integers(0, NUM_SAMPLES - 1))
    def read(self, sample: int) -> None:
        assert self.ds is not None
        before = self.local_set()
        assert self.ds[sample]["v"] == sample
        self.after_use(int(self.ds.spanner[sample][0]), before, repairs=True)

    @rule(shard=st.integers(0, MAX_SHARDS - 1))
    def prepare(self, shard: int) -> None:
        assert self.ds is not None
        shard %= self.num_shards
        before = self.local_set()
        self.ds.prepare_shard(shard)
        # Like the reference, a LOCAL shard whose raw file is gone is fetched again.
        self.after_use(shard, before, repairs=True)

    @rule(shard=st.integers(0, MAX_SHARDS - 1))
    def evict(self, shard: int) -> None:
        assert self.ds is not None
        shard %= self.num_shards
        self.ds.evict_shard(shard)
        assert self.states()[shard] == ShardState.REMOTE
        assert not any(os.path.exists(p) for p in self.raw[shard] + self.zips[shard])
        self.forget(shard)

    @precondition(lambda self: self.future)
    @rule(steps=st.integers(1, 12))
    def advance(self, steps: int) -> None:
        """The reader moves on through the epoch order (what `ReadingSlot.enter` publishes)."""
        assert self.ds is not None
        self.position = min(self.position + steps, NUM_SAMPLES)
        self.ds._ss_cache.progress.numpy()[0] = self.position

    @rule()
    def evict_coldest(self) -> None:
        assert self.ds is not None
        before = self.local_set()
        if not before:
            with pytest.raises(ValueError, match="no shards present locally to evict"):
                self.ds.evict_coldest_shard()
            return
        # The shard automatic eviction would take first: needed latest, then coldest.
        next_use = self.ds._ss_cache.next_uses() if self.future else None
        self.ds.evict_coldest_shard()
        gone = before - self.local_set()
        if next_use is None:
            first = min(before, key=lambda s: self.last_use[s])
        else:
            first = min(before, key=lambda s: (-next_use[s], self.last_use[s]))
        assert gone == {first}, (f"evicted {gone}, expected {first} ({self.last_use}, "
                                 f"next uses {next_use})")
        self.forget(first)

    @rule(data=st.data())
    def read_while_the_remote_lacks_the_shard(self, data: st.DataObject) -> None:
        """A failed fetch leaves the shard REMOTE and the accounting exact (reservation undone)."""
        assert self.ds is not None
        remote_shards = np.flatnonzero(self.states()[:self.num_shards] == ShardState.REMOTE)
        if not len(remote_shards):
            return
        shard = int(data.draw(st.sampled_from(remote_shards.tolist()), label="shard"))
        sample = int(self.ds.sample_offset_per_shard[shard])
        names = [info.basename for pair in self.ds.shards[shard].file_pairs
                 for info in pair if info is not None]
        hidden = [(os.path.join(self.remote, n), os.path.join(self.hidden, n))
                  for n in names if os.path.exists(os.path.join(self.remote, n))]
        before = self.local_set()
        for src, dst in hidden:
            os.rename(src, dst)
        try:
            with pytest.raises(FileNotFoundError):
                self.ds[sample]
        finally:
            for src, dst in hidden:
                os.rename(dst, src)
        assert self.states()[shard] == ShardState.REMOTE
        evicted = before - self.local_set()
        if not self.limited:
            assert not evicted
        for victim in evicted:
            self.forget(victim)

    @precondition(lambda self: self.tampers < self.max_tampers)
    @rule(data=st.data())
    def delete_behind_its_back(self, data: st.DataObject) -> None:
        """Delete one cached shard file and drop the shard's mapping (as a long-running job
        would have by the time it needs the shard again), without telling the cache."""
        assert self.ds is not None
        files = sorted(name for name in os.listdir(self.local) if SHARD_NAME.match(name))
        if not files:
            return
        name = data.draw(st.sampled_from(files), label="file")
        shard = int(name.split(".")[1])
        path = os.path.join(self.local, name)
        self.unrepaired[shard] = self.unrepaired.get(shard, 0) + os.path.getsize(path)
        self.tampers += 1
        os.remove(path)
        self.ds.shards[shard].close()

    # ------------------------------------------------------------------------------ invariants

    @invariant()
    def directory_holds_only_index_and_shards(self) -> None:
        if self.ds is None:
            return
        names = set(os.listdir(self.local))
        assert "index.json" in names
        stray = {n for n in names - {"index.json"} if not SHARD_NAME.match(n)}
        assert not stray, f"unexpected files in the cache dir: {stray}"

    @invariant()
    def usage_matches_disk(self) -> None:
        """Exact, except for files deleted behind its back from shards it has not looked at
        since (their bytes stay counted until then, and only until then)."""
        if self.ds is None:
            return
        on_disk = dir_bytes(self.local)
        drift = self.ds.cache_usage - on_disk
        leaked = sum(self.unrepaired.values())
        assert 0 <= drift <= leaked, (
            f"usage {self.ds.cache_usage}, on disk {on_disk}, unrepaired {self.unrepaired}")
        if self.ds.cache_limit is not None:
            assert on_disk <= self.ds.cache_limit

    @invariant()
    def states_agree_with_files(self) -> None:
        if self.ds is None:
            return
        states = self.states()
        assert set(states.tolist()) <= {ShardState.REMOTE, ShardState.LOCAL}, states
        for shard in range(self.num_shards):
            if shard in self.unrepaired:
                continue  # LOCAL may point at a deleted file until a read repairs it
            local = states[shard] == ShardState.LOCAL
            assert local == self.raw_present(shard), f"shard {shard}: state {states[shard]}"
            zips = [os.path.isfile(p) for p in self.zips[shard]]
            if not local:
                assert not any(zips), f"shard {shard} REMOTE but its zip is cached"
            elif self.keep_zip:
                assert all(zips), f"shard {shard} LOCAL with keep_zip but its zip is missing"
            else:
                assert not any(zips), f"shard {shard} LOCAL, keep_zip=False, zip still cached"


CONFIGS = [(None, False, False), (None, False, True), ("zstd", False, False),
           ("zstd", False, True), ("zstd", True, False), ("zstd", True, True)]


@pytest.mark.parametrize("compression,keep_zip,limited", CONFIGS, ids=str)
@pytest.mark.parametrize("tamper", [False, True], ids=["clean", "tamper"])
def test_cache_machine(remotes: dict[str | None, str], compression: str | None, keep_zip: bool,
                       limited: bool, tamper: bool) -> None:
    max_tampers = 3 if tamper else 0
    machine = type("Machine", (CacheMachine,), {"remote": remotes[compression],
                                                 "keep_zip": keep_zip, "limited": limited,
                                                 "max_tampers": max_tampers})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=12, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow]))


@pytest.mark.parametrize("compression,keep_zip", [(None, False), ("zstd", True)], ids=str)
def test_cache_machine_with_next_uses(remotes: dict[str | None, str], compression: str | None,
                                      keep_zip: bool) -> None:
    machine = type("Machine", (CacheMachine,), {"remote": remotes[compression],
                                                 "keep_zip": keep_zip, "limited": True,
                                                 "max_tampers": 1, "future": True})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=12, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow]))


# ---------------------------------------------------------------------------------- reproducers


@pytest.fixture
def tampered(remotes: dict[str | None, str], tmp_path) -> tuple[StreamingDataset, str]:
    """A dataset whose shard 0 was read, then its file deleted behind its back."""
    local = str(tmp_path / "cache")
    ds = StreamingDataset(remote=remotes[None], local=local, batch_size=1)
    assert ds[0]["v"] == 0
    os.remove(os.path.join(local, "shard.00000.mds"))
    ds.shards[0].close()
    yield ds, local
    ds.close()


def test_usage_after_tampering_then_evict(tampered) -> None:
    ds, local = tampered
    ds.evict_shard(0)
    assert ds.cache_usage == dir_bytes(local)


def test_usage_after_tampering_then_read(tampered) -> None:
    ds, local = tampered
    assert ds[1]["v"] == 1
    assert os.path.isfile(os.path.join(local, "shard.00000.mds"))
    assert ds.cache_usage == dir_bytes(local)


def test_prepare_restores_a_deleted_raw_file(tampered) -> None:
    ds, local = tampered
    ds.prepare_shard(0)
    assert os.path.isfile(os.path.join(local, "shard.00000.mds"))


def test_repeated_tampering_under_a_limit_keeps_working(remotes, tmp_path) -> None:
    local = str(tmp_path / "cache")
    limit = small_limit(remotes[None], local)
    with StreamingDataset(remote=remotes[None], local=local, batch_size=1,
                          cache_limit=limit) as ds:
        for _ in range(8):
            assert ds[0]["v"] == 0
            os.remove(os.path.join(local, "shard.00000.mds"))
            ds.shards[0].close()
        assert ds[0]["v"] == 0
