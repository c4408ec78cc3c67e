"""`write_parallel`: sub-datasets from several processes, merged; failures leave no index."""

from __future__ import annotations

import os
from typing import Any

import pytest

from streaming.convert.columns import ConversionError
from streaming.convert.parallel import write_parallel
from tests.convert.convert_helpers import failing, numbered, read_back

COLUMNS = {"id": "int", "text": "str"}


def test_processes_write_one_dataset_in_task_order(tmp_path: Any) -> None:
    counts: list[int] = []
    result = write_parallel(range(5), numbered, str(tmp_path / "out"), columns=COLUMNS,
                            num_workers=2, progress=counts.append)
    assert result.samples == 50 and sum(counts) == 50
    assert result.partitions == [f"part-{i:05d}" for i in range(5)]
    assert [s["id"] for s in read_back(str(tmp_path / "out"))] == list(range(50))


def test_single_task_writes_flat_and_remote_output(tmp_path: Any) -> None:
    result = write_parallel([3], numbered, str(tmp_path / "flat"), columns=COLUMNS,
                            num_workers=0)
    assert result.partitions == [] and os.path.exists(tmp_path / "flat" / "shard.00000.mds")
    remote = f"file://{tmp_path}/remote"
    result = write_parallel([0, 1], numbered, remote, columns=COLUMNS, num_workers=0,
                            compression="zstd")
    assert result.local is None and result.merge.remote_index == f"{remote}/index.json"
    assert sorted(os.listdir(tmp_path / "remote")) == ["index.json", "part-00000", "part-00001"]


def test_a_failed_task_publishes_nothing(tmp_path: Any) -> None:
    out = str(tmp_path / "out")
    with pytest.raises(ConversionError, match="boom in task 1"):
        write_parallel([0, 1, 2], failing, out, columns=COLUMNS, num_workers=0)
    assert not os.path.exists(f"{out}/index.json")
    assert not os.path.exists(f"{out}/part-00001")  # its partial shards are gone too
    # and so is task 0's finished sub-dataset: merged, it would pass for the whole dataset
    assert os.listdir(out) == []
    result = write_parallel([0, 1], numbered, out, columns=COLUMNS, num_workers=0)
    assert result.samples == 20 and len(read_back(out)) == 20


@pytest.mark.parametrize("workers", [0, 2])
def test_a_failed_run_leaves_no_sub_dataset_to_merge(tmp_path: Any, workers: int) -> None:
    out = str(tmp_path / "out")
    with pytest.raises(ConversionError, match="boom in task 1"):  # the last task fails
        write_parallel([0, 2, 3, 1], failing, out, columns=COLUMNS, num_workers=workers)
    assert os.listdir(out) == []  # tasks 0, 2 and 3 finished; `merge_index` finds nothing


def test_a_refused_or_failed_remote_run_leaves_no_scratch_folder(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    remote = f"file://{tmp_path}/remote"
    with pytest.raises(ConversionError, match="boom in task 1"):
        write_parallel([0, 1], failing, f"{remote}/a", columns=COLUMNS, num_workers=0)
    write_parallel([0], numbered, f"{remote}/b", columns=COLUMNS, num_workers=0)
    with pytest.raises(FileExistsError, match="already holds a dataset"):
        write_parallel([1], numbered, f"{remote}/b", columns=COLUMNS, num_workers=0)
    assert os.listdir(scratch) == []


def _remote_ids(remote: str, cache: str) -> list[int]:
    from streaming import StreamingDataset

    dataset = StreamingDataset(remote=remote, local=cache, batch_size=1)
    return [int(dataset[i]["id"]) for i in range(dataset.num_samples)]


def test_a_dataset_at_the_remote_is_refused_or_replaced_whole(tmp_path: Any) -> None:
    """A local output's `exist_ok` rule, at the remote: a second conversion to a URL holding a
    dataset is refused; with `exist_ok` a failed one leaves the old dataset as it was (its
    files untouched), and one that succeeds replaces it."""
    remote = f"file://{tmp_path}/remote"
    write_parallel([0], numbered, remote, columns=COLUMNS, num_workers=0)
    with pytest.raises(FileExistsError, match="already holds a dataset"):
        write_parallel([1], numbered, remote, columns=COLUMNS, num_workers=0)
    with pytest.raises(ConversionError, match="boom in task 1"):
        write_parallel([2, 1], failing, remote, columns=COLUMNS, num_workers=0, exist_ok=True)
    assert _remote_ids(remote, str(tmp_path / "c1")) == list(range(10))
    result = write_parallel([3, 4], numbered, remote, columns=COLUMNS, num_workers=0,
                            exist_ok=True)
    assert all(name.endswith(("part-00000", "part-00001")) and name[8] == "-"
               for name in result.partitions)
    assert _remote_ids(remote, str(tmp_path / "c2")) == list(range(30, 50))


def test_a_script_without_a_main_guard_is_told_what_to_do(tmp_path: Any) -> None:
    """Spawned workers import the script and die in multiprocessing's bootstrap check; the
    bare BrokenProcessPool said nothing of the cause."""
    import subprocess
    import sys

    script = tmp_path / "top_level.py"
    script.write_text(
        "from streaming.convert.parallel import write_parallel\n"
        "from tests.convert.convert_helpers import numbered\n"
        f"write_parallel([0, 1], numbered, {str(tmp_path / 'out')!r},"
        " columns={'id': 'int', 'text': 'str'}, num_workers=2)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "PYTHONPATH": root}, timeout=300)
    assert done.returncode != 0
    # The error's line (multiprocessing's resource tracker may warn after it, at exit).
    lines = [line for line in done.stderr.splitlines() if "ConversionError:" in line]
    assert lines, done.stderr[-3000:]
    last = lines[-1]
    assert "BrokenProcessPool" in last
    assert f"If {script} calls this at its top level" in last
    assert 'if __name__ == "__main__":' in last and "(spawn)" in last


def test_merging_again_never_brings_back_a_replaced_or_failed_run(tmp_path: Any) -> None:
    """`merge-index` is safe to re-run: the parts of a run that failed and those of a dataset
    replaced with `exist_ok` stay at the remote (nothing there is deleted), marked, and a merge
    leaves them out. (Before, re-merging published 150 samples of five runs' parts.)"""
    from streaming.merge import RETIRED_MARKER, merge_root

    remote = f"file://{tmp_path}/remote"
    write_parallel([0, 1], numbered, remote, columns=COLUMNS, num_workers=0)  # ids 0-19
    with pytest.raises(ConversionError, match="boom in task 1"):
        write_parallel([2, 1], failing, remote, columns=COLUMNS, num_workers=0, exist_ok=True)
    write_parallel([3, 4], numbered, remote, columns=COLUMNS, num_workers=0, exist_ok=True)
    expected = list(range(30, 50))
    assert _remote_ids(remote, str(tmp_path / "c1")) == expected
    report = merge_root(remote)
    assert len(report.partitions) == 2 and report.samples == 20
    assert len(report.retired) == 4  # the first dataset's two parts, the failed run's two
    assert os.path.exists(f"{tmp_path}/remote/part-00000/{RETIRED_MARKER}")
    assert _remote_ids(remote, str(tmp_path / "c2")) == expected


def test_a_failed_replacement_of_a_local_output_keeps_the_old_dataset(tmp_path: Any) -> None:
    """`exist_ok` into a local folder writes beside it and swaps in the complete dataset: a
    failing run used to clear the folder first, losing the previous dataset with it."""
    out = str(tmp_path / "out")
    write_parallel([0, 1], numbered, out, columns=COLUMNS, num_workers=0)
    with pytest.raises(ConversionError, match="boom in task 1"):
        write_parallel([2, 1], failing, out, columns=COLUMNS, num_workers=0, exist_ok=True)
    assert sorted(int(s["id"]) for s in read_back(out)) == list(range(20))
    assert os.listdir(tmp_path) == ["out"]  # no staging folder left beside it
    result = write_parallel([3], numbered, out, columns=COLUMNS, num_workers=0, exist_ok=True)
    assert sorted(int(s["id"]) for s in read_back(out)) == list(range(30, 40))
    assert result.local == out and sorted(os.listdir(tmp_path)) == ["out"]
    assert not os.path.exists(f"{out}/part-00000")  # the replaced dataset's files are gone


def test_a_directory_that_cannot_be_moved_is_replaced_in_place(tmp_path: Any,
                                                                monkeypatch: Any) -> None:
    """A mount point (or a folder whose parent refuses the rename) gets its new content moved in
    entry by entry, still only after the new dataset is complete."""
    from streaming.convert import staged_dir

    target = tmp_path / "mount"
    (target / "old").mkdir(parents=True)
    (target / "old.txt").write_text("old")
    real_rename = os.rename

    def rename(src: str, dst: str) -> None:
        if os.path.abspath(src) == str(target):
            raise OSError(16, "Device or resource busy")
        real_rename(src, dst)

    monkeypatch.setattr(staged_dir.os, "rename", rename)
    with staged_dir.staged_replacement(str(target)) as staging:
        (tmp_path / staging / "index.json").write_text("{}")
        assert sorted(os.listdir(target)) == ["old", "old.txt"]  # untouched meanwhile
    assert os.listdir(target) == ["index.json"] and sorted(os.listdir(tmp_path)) == ["mount"]


def test_a_replaced_output_keeps_its_mode_its_link_and_the_working_directory(
        tmp_path: Any, monkeypatch: Any) -> None:
    """The staging folder was made 0700 and renamed in (other users lost access); a symlinked
    output became a real folder beside the link (the link's target kept the old data); an
    output that was the working directory was swapped away from under the process."""
    disk = tmp_path / "disk" / "ds"
    disk.mkdir(parents=True)
    os.chmod(disk, 0o755)
    link = tmp_path / "ds"
    os.symlink(disk, link)
    write_parallel([0], numbered, str(link), columns=COLUMNS, num_workers=0, exist_ok=True)
    write_parallel([1], numbered, str(link), columns=COLUMNS, num_workers=0, exist_ok=True)
    assert os.path.islink(link) and oct(os.stat(disk).st_mode & 0o777) == oct(0o755)
    assert sorted(int(s["id"]) for s in read_back(str(disk))) == list(range(10, 20))
    monkeypatch.chdir(disk)
    result = write_parallel([2], numbered, ".", columns=COLUMNS, num_workers=0, exist_ok=True)
    assert result.local == str(disk) and os.getcwd() == str(disk)
    assert sorted(int(s["id"]) for s in read_back(".")) == list(range(20, 30))
    assert sorted(os.listdir(tmp_path / "disk")) == ["ds"]  # no staging folder left
