"""`merge_index`: both call forms, local and remote, re-runs, and what it refuses to merge."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from streaming.format import load_readers
from streaming.format.index import read_index_objects
from streaming.merge import (
    _format_remote_index_files,
    _not_merged_index,
    merge_index,
    merge_partitions,
    merge_root,
)


def _ids(root: str) -> list[int]:
    return [int(sample["id"]) for reader in load_readers(root) for sample in reader]


@pytest.fixture
def parts(tmp_path: Any, write_mds: Callable[..., str]) -> str:
    root = str(tmp_path / "root")
    write_mds(f"{root}/p0", range(0, 5), size_limit=300)
    write_mds(f"{root}/p1", range(5, 12))
    return root


def test_list_form_writes_the_reference_layout(parts: str) -> None:
    merge_index([f"{parts}/p0/index.json", f"{parts}/p1/index.json"], parts)
    text = open(f"{parts}/index.json").read()
    assert text.startswith('{"version": 2, "shards": [')  # plain json.dump, version first
    shards = json.loads(text)["shards"]
    sub = read_index_objects(open(f"{parts}/p0/index.json").read())
    assert shards[0] == dict(sub[0], raw_data=dict(sub[0]["raw_data"],
                                                     basename="p0/shard.00000.mds"))
    assert list(shards[0]) == list(sub[0])  # keys in the sub-index's order, as the reference
    assert [s["raw_data"]["basename"].split("/")[0] for s in shards] == ["p0"] * (
        len(shards) - 1) + ["p1"]
    assert _ids(parts) == list(range(12))


def test_local_indexes_merged_into_a_remote_need_their_files_there(parts: str,
                                                                   tmp_path: Any) -> None:
    """Sub-datasets written locally and never uploaded: the merged index would be published to
    the remote naming files it does not have (it was, and reading it failed shard by shard)."""
    from streaming.merge import IncompletePartitionError

    remote = tmp_path / "remote"
    indexes = [f"{parts}/p0/index.json", f"{parts}/p1/index.json"]
    with pytest.raises(IncompletePartitionError, match="published to file://.*must be there"):
        merge_index(indexes, (parts, f"file://{remote}"))
    assert not remote.exists() and not os.path.exists(f"{parts}/index.json")
    for name in ("p0", "p1"):  # uploaded now: the same merge goes through
        shutil.copytree(f"{parts}/{name}", remote / name)
    merge_index(indexes, (parts, f"file://{remote}"))
    assert _ids(str(remote)) == list(range(12))


def test_keep_local_false_without_remote_keeps_the_data(parts: str) -> None:
    """The reference deleted `out` itself here: the merged index and every shard with it."""
    with pytest.warns(UserWarning, match="keep_local=False and no remote"):
        merge_index(parts, keep_local=False)
    assert not os.path.exists(f"{parts}/index.json")  # as the reference: no local merged index
    assert _ids(f"{parts}/p0") + _ids(f"{parts}/p1") == list(range(12))  # the data is all there


def test_root_form_is_safe_to_rerun_and_ignores_other_json(parts: str, tmp_path: Any) -> None:
    from streaming import JSONWriter

    with open(f"{parts}/p0/notes.json", "w") as file:
        file.write("{}")  # the reference would try to merge this as an index
    merge_index(parts)
    first = open(f"{parts}/index.json").read()
    merge_index(parts)  # the reference fails: index.json already exists
    assert open(f"{parts}/index.json").read() == first
    with JSONWriter(out=f"{parts}/p2", columns={"id": "int", "text": "str"}) as writer:
        writer.write({"id": 12, "text": "sample 12"})  # shard.00000.json is no index either
    merge_index(parts, keep_local=True)
    assert _ids(parts) == list(range(13))


@pytest.mark.parametrize("form", ["root", "list", "remote"])
def test_a_dataset_written_at_the_root_is_never_merged_away(
        tmp_path: Any, write_mds: Callable[..., str], form: str) -> None:
    """A dataset at the root and more data in a sub-folder: the merged index would list only
    the sub-folder's shards, dropping the root's samples from view; it is refused."""
    root = str(tmp_path / "root")
    write_mds(root, range(3))
    write_mds(f"{root}/extra", range(100, 102))
    before = open(f"{root}/index.json").read()
    with pytest.raises(FileExistsError, match=r"shard.00000.mds is at the root"):
        if form == "root":
            merge_index(root)
        elif form == "list":
            merge_index([f"{root}/extra/index.json"], root)
        else:
            merge_index(f"file://{root}")
    assert open(f"{root}/index.json").read() == before and _ids(root) == [0, 1, 2]


def test_half_written_partition_is_skipped_with_a_warning(parts: str,
                                                         write_mds: Callable[..., str]) -> None:
    write_mds(f"{parts}/p2", range(100, 103))
    os.remove(f"{parts}/p2/index.json")  # a writer that died before finish()
    write_mds(f"{parts}/p3", range(200, 203))
    os.remove(f"{parts}/p3/shard.00000.mds")  # an index naming a missing shard
    with pytest.warns(UserWarning) as record:
        report = merge_root(parts)
    messages = [str(w.message) for w in record]
    assert any("p2" in m and "no index.json" in m for m in messages)
    assert any("p3" in m and "incomplete" in m for m in messages)
    assert report.partitions == ["p0", "p1"] and set(report.skipped) == {"p2", "p3"}
    assert _ids(parts) == list(range(12))


def test_skips_are_named_by_folder_and_strict_writes_nothing(
        tmp_path: Any, write_mds: Callable[..., str]) -> None:
    remote = f"file://{tmp_path}/remote"
    for name, ids in (("p0", range(3)), ("p1", range(3, 6))):
        write_mds((f"{tmp_path}/l{name}", f"{remote}/{name}"), ids)
    os.remove(f"{tmp_path}/remote/p1/shard.00000.mds")
    with pytest.warns(UserWarning):
        report = merge_root(remote)
    assert report.partitions == ["p0"]
    assert list(report.skipped) == ["p1"]  # not "('', 'file://.../p1/index.json')"
    before = open(f"{tmp_path}/remote/index.json").read()
    write_mds((f"{tmp_path}/lp2", f"{remote}/p2"), range(6, 8))
    with pytest.raises(FileNotFoundError, match="incomplete"):
        merge_root(remote, strict=True)
    assert open(f"{tmp_path}/remote/index.json").read() == before  # p2 not published


def test_list_form_refuses_an_incomplete_partition(parts: str) -> None:
    with open(f"{parts}/p1/shard.00000.mds", "r+b") as file:
        file.truncate(10)
    with pytest.raises(FileNotFoundError, match="incomplete"):
        merge_index([f"{parts}/p0/index.json", f"{parts}/p1/index.json"], parts)
    assert not os.path.exists(f"{parts}/index.json")  # never a broken merged index


def test_root_form_with_nothing_to_merge_keeps_an_existing_index(tmp_path: Any,
                                                                write_mds: Callable[..., str]
                                                                ) -> None:
    root = write_mds(str(tmp_path / "flat"), range(3))
    before = open(f"{root}/index.json").read()
    assert merge_root(root).partitions == []
    assert open(f"{root}/index.json").read() == before


def test_root_form_never_replaces_an_index_with_an_empty_one(tmp_path: Any,
                                                              write_mds: Callable[..., str]
                                                              ) -> None:
    """Sub-datasets written locally, merged into a remote they never reached: each is skipped
    as incomplete there, and the remote's index must not become an empty one."""
    local, remote = str(tmp_path / "local"), str(tmp_path / "remote")
    write_mds(f"{local}/p0", range(3))
    write_mds(f"{local}/p1", range(3, 7))
    write_mds(f"{remote}/old", range(100, 102))  # what the remote held before: a merge
    merge_index(remote)
    shutil.rmtree(f"{remote}/old")
    before = open(f"{remote}/index.json").read()
    with pytest.warns(UserWarning, match="incomplete"):
        with pytest.raises(FileNotFoundError, match="no sub-dataset .* could be merged"):
            merge_index((local, remote))
    assert open(f"{remote}/index.json").read() == before
    assert not os.path.exists(f"{local}/index.json")
    merge_index(local)  # the local side alone is complete
    assert _ids(local) == list(range(7))


@pytest.mark.parametrize("scheme", ["file://", ""])
def test_remote_root_form_uploads_and_reads_remote_partitions(tmp_path: Any, scheme: str,
                                                             write_mds: Callable[..., str]
                                                             ) -> None:
    remote_dir = str(tmp_path / "remote")
    remote = scheme + remote_dir
    write_mds((str(tmp_path / "l0"), f"{remote}/p0"), range(4))
    write_mds((str(tmp_path / "l1"), f"{remote}/p1"), range(4, 9))
    local = str(tmp_path / "local")
    if scheme:
        merge_index(remote)  # remote URL only: indexes are downloaded
    else:
        merge_index((local, remote))
        assert os.path.exists(f"{local}/index.json")
    assert _ids(remote_dir) == list(range(9))


def test_list_form_with_pairs_prefers_local_and_checks_the_remote(
        tmp_path: Any, write_mds: Callable[..., str]) -> None:
    remote = f"file://{tmp_path}/remote"
    pairs = []
    for i, ids in enumerate([range(3), range(3, 6)]):
        write_mds((f"{tmp_path}/local/p{i}", f"{remote}/p{i}"), ids, keep_local=True)
        pairs.append((f"{tmp_path}/local/p{i}/index.json", f"{remote}/p{i}/index.json"))
    os.remove(f"{tmp_path}/local/p1/index.json")  # then the remote copy is used
    report = merge_partitions(pairs, (f"{tmp_path}/local", remote), keep_local=False)
    assert report.partitions == ["p0", "p1"] and report.samples == 6
    assert not os.path.exists(f"{tmp_path}/local")  # keep_local=False removes the local root
    assert _ids(f"{tmp_path}/remote") == list(range(6))
    os.remove(f"{tmp_path}/remote/p0/shard.00000.mds")
    with pytest.raises(FileNotFoundError, match="incomplete"):
        merge_partitions(pairs[:1], remote)


def test_a_truncated_remote_shard_is_refused_as_a_local_one_is(
        tmp_path: Any, write_mds: Callable[..., str]) -> None:
    """A remote listing now gives sizes: a shard cut to half its size was merged (its name
    was there) and readers failed on it."""
    remote = f"file://{tmp_path}/remote"
    write_mds((f"{tmp_path}/l0", f"{remote}/p0"), range(3))
    write_mds((f"{tmp_path}/l1", f"{remote}/p1"), range(3, 6))
    shard = f"{tmp_path}/remote/p1/shard.00000.mds"
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) // 2)
    with pytest.raises(FileNotFoundError, match="shard.00000.mds .* missing or truncated"):
        merge_partitions([f"{remote}/p1/index.json"], remote)
    with pytest.warns(UserWarning, match="skipping sub-dataset .*p1"):
        merge_index(remote)
    assert _ids(f"{tmp_path}/remote") == list(range(3))


def test_a_sub_dataset_outside_the_output_is_merged_only_where_its_files_are(
        tmp_path: Any, write_mds: Callable[..., str]) -> None:
    """The list form names a sub-dataset that is not under `out` by its basename (as the
    reference does): right for index copies in a staging folder whose shards were sent under
    `out`, but an index naming files nowhere for one that lives elsewhere."""
    remote = f"file://{tmp_path}/bucket"
    write_mds((f"{tmp_path}/l0", f"{remote}/jobs/part0"), range(4))
    with pytest.raises(FileNotFoundError, match="not under the output"):
        merge_partitions([f"{remote}/jobs/part0/index.json"], f"{remote}/merged")
    assert not os.path.exists(f"{tmp_path}/bucket/merged/index.json")
    # A staging copy of the index, its shards under out/part0: merged as the reference does.
    write_mds((f"{tmp_path}/staging/part0", f"{remote}/merged/part0"), range(4),
              keep_local=True)
    report = merge_partitions([f"{tmp_path}/staging/part0/index.json"], f"{remote}/merged")
    assert report.partitions == ["part0"]
    assert _ids(f"{tmp_path}/bucket/merged") == list(range(4))


def test_bad_calls() -> None:
    with pytest.raises(ValueError, match="Invalid arguments to merge_index"):
        merge_index(3)
    with pytest.raises(ValueError, match="Invalid arguments to merge_index"):
        merge_index(["a"], "out", True, 60, "extra")
    with pytest.raises(RuntimeError, match="Failed to download index.json"):
        merge_index(["file:///nonexistent/p0/index.json"], "/tmp/unused-out")
    with pytest.raises(RuntimeError, match="Failed to download index.json") as missing:
        merge_index(["/nonexistent/p0/index.json"], "/tmp/unused-out")  # a local path, as a URL
    assert isinstance(missing.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError, match="Check data availability"):
        merge_index([("/nonexistent/index.json", "")], "/tmp/unused-out")
    assert merge_index([], "out") is None  # a no-op with a warning, as in the reference


def test_reference_helpers() -> None:
    assert _not_merged_index("root/p0/index.json", "s3://bucket/root")
    assert not _not_merged_index("root/index.json", "s3://bucket/root")
    files = ["root/index.json", "root/p0/index.json", "root/p0/shard.00000.mds"]
    assert _format_remote_index_files("s3://bucket/root", files) == [
        "s3://bucket/root/p0/index.json"]
    assert _format_remote_index_files("dbfs:/Volumes/cat/root", ["Volumes/cat/root/p/index.json"]
                                      ) == ["dbfs:/Volumes/cat/root/p/index.json"]


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 7), min_size=1, max_size=5),
       limit=st.sampled_from([None, 300, 400]))
def test_merged_order_is_the_concatenation(tmp_path_factory: Any, write_mds: Callable[..., str],
                                           sizes: list[int], limit: int | None) -> None:
    root = str(tmp_path_factory.mktemp("prop"))
    start = 0
    for i, size in enumerate(sizes):
        write_mds(f"{root}/{i:03d}", range(start, start + size), size_limit=limit)
        start += size
    report = merge_root(root)
    assert report.samples == start and report.partitions == [f"{i:03d}" for i in
                                                             range(len(sizes))]
    assert _ids(root) == list(range(start))
