"""Temp files of writers killed mid-write (a SIGKILLed reader's download) are swept when a
dataset next sets up its cache; those of live writers never are."""

from __future__ import annotations

import os
import subprocess
import sys

from streaming import StreamingDataset
from streaming.atomic import drop_dead_temps, temp_name_for
from tests.dataset.conftest import write_ints


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_the_temps_of_dead_writers_are_dropped(tmp_path) -> None:
    dead = str(tmp_path / f"shard.00001.mds.tmp.{_dead_pid()}.0123456789ab")
    live = temp_name_for(str(tmp_path / "shard.00002.mds"))  # ours: running
    other = str(tmp_path / "notes.tmp.12.txt")  # not one of our temp names
    for path in (dead, live, other):
        open(path, "wb").close()
    assert drop_dead_temps([dead, live, other, str(tmp_path / "gone.tmp.1.0123456789ab")]) == [
        dead]
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in (live, other))


def test_a_dataset_sweeps_a_killed_download_from_its_cache(tmp_path) -> None:
    remote = write_ints(str(tmp_path / "remote"), range(30))
    local = tmp_path / "cache"
    local.mkdir()
    left = local / f"shard.00001.mds.tmp.{_dead_pid()}.0123456789ab"
    left.write_bytes(b"")
    with StreamingDataset(remote=remote, local=str(local), batch_size=4) as ds:
        assert sorted(int(s["v"]) for s in ds) == list(range(30))
    assert not left.exists()
