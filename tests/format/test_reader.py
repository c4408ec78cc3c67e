"""The shared reader base: sizes, cache set-up (`set_up_local`), eviction, file pairs."""

from __future__ import annotations

import mmap
import os

import pytest
from formats_support import materialise

from streaming.errors import NotARegularFileError
from streaming.format import JSONWriter, MDSReader, MDSWriter, load_readers
from streaming.format.fileio import READ_BELOW, MappingRegistry, map_file_identified
from streaming.format.index import FileInfo


def listing(root) -> set[str]:
    return {os.path.join(root, name) for name in os.listdir(root)}


@pytest.fixture
def zipped(tmp_path):
    """An MDS dataset with one shard in both forms (raw decompressed next to the zip)."""
    with MDSWriter(columns={"a": "int"}, out=str(tmp_path), compression="zstd") as writer:
        for i in range(10):
            writer.write({"a": i})
    materialise(str(tmp_path))
    reader = load_readers(str(tmp_path))[0]
    return tmp_path, reader


def test_sizes(zipped) -> None:
    root, reader = zipped
    raw = os.path.getsize(root / "shard.00000.mds")
    packed = os.path.getsize(root / "shard.00000.mds.zstd")
    assert reader.get_raw_size() == raw and reader.get_zip_size() == packed
    assert reader.get_max_size() == raw + packed
    assert reader.get_persistent_size(keep_zip=True) == raw + packed
    assert reader.get_persistent_size(keep_zip=False) == raw
    assert len(reader) == reader.size == 10
    assert reader.file_pairs == [(reader.raw_data, reader.zip_data)]


def test_set_up_local_keeps_both_when_safe(zipped) -> None:
    root, reader = zipped
    assert reader.set_up_local(listing(root), safe_keep_zip=True) == reader.get_max_size()
    assert sorted(os.listdir(root)) == ["index.json", "shard.00000.mds", "shard.00000.mds.zstd"]


def test_set_up_local_drops_zip_when_not_safe(zipped) -> None:
    root, reader = zipped
    # QUIRK fixed: the reference deleted the raw file here while counting its size.
    assert reader.set_up_local(listing(root), safe_keep_zip=False) == reader.get_raw_size()
    assert sorted(os.listdir(root)) == ["index.json", "shard.00000.mds"]
    assert reader[3] == {"a": 3}


def test_set_up_local_raw_without_zip_when_keeping_zips(zipped) -> None:
    root, reader = zipped
    os.remove(root / "shard.00000.mds.zstd")
    assert reader.set_up_local(listing(root), safe_keep_zip=True) == 0
    assert os.listdir(root) == ["index.json"]


def test_set_up_local_zip_only(zipped) -> None:
    root, reader = zipped
    os.remove(root / "shard.00000.mds")
    assert reader.set_up_local(listing(root), safe_keep_zip=False) == reader.get_zip_size()
    assert reader.set_up_local(set(), safe_keep_zip=False) == 0


def test_set_up_local_uncompressed(tmp_path) -> None:
    with MDSWriter(columns={"a": "int"}, out=str(tmp_path)) as writer:
        writer.write({"a": 1})
    reader = load_readers(str(tmp_path))[0]
    assert reader.get_zip_size() is None and reader.get_max_size() == reader.get_raw_size()
    assert reader.set_up_local(listing(tmp_path), True) == reader.get_raw_size()
    (tmp_path / "shard.00000.mds.zstd").write_bytes(b"x")
    odd = MDSReader(str(tmp_path), None, ["int"], ["a"], [8], None, [], reader.raw_data, 1, None,
                    FileInfo("shard.00000.mds.zstd", 1, {}))  # an index naming a zip form
    with pytest.raises(ValueError, match="Shard is invalid: compression was not used, but has a "
                                         "compressed form."):
        odd.set_up_local(listing(tmp_path), True)


def test_split_shard_partial_form_is_deleted(tmp_path) -> None:
    with JSONWriter(columns={"a": "int"}, out=str(tmp_path), compression="gz") as writer:
        writer.write({"a": 1})
    materialise(str(tmp_path))
    reader = load_readers(str(tmp_path))[0]
    assert [pair[0].basename for pair in reader.file_pairs] == [
        "shard.00000.json.meta", "shard.00000.json"]
    os.remove(tmp_path / "shard.00000.json")  # raw form now partial (meta only)
    assert reader.set_up_local(listing(tmp_path), False) == reader.get_zip_size()
    assert sorted(os.listdir(tmp_path)) == [
        "index.json", "shard.00000.json.gz", "shard.00000.json.meta.gz"]


def test_a_partial_form_that_is_the_only_copy_is_kept(tmp_path) -> None:
    """A local-only JSONL shard that lost its `.meta`: its data file was deleted on opening."""
    with JSONWriter(columns={"a": "int"}, out=str(tmp_path)) as writer:
        writer.write({"a": 1})
    reader = load_readers(str(tmp_path))[0]
    os.remove(tmp_path / "shard.00000.json.meta")
    assert reader.set_up_local(listing(tmp_path), False, sole_copy=True) == 0
    assert (tmp_path / "shard.00000.json").exists()
    assert reader.set_up_local(listing(tmp_path), False) == 0  # a cache: the remote has it
    assert not (tmp_path / "shard.00000.json").exists()


def test_a_file_of_another_size_than_indexed_is_not_deleted(tmp_path) -> None:
    """An index naming a user's file in the cache folder as half of a shard deleted it when the
    other half was missing."""
    with JSONWriter(columns={"a": "int"}, out=str(tmp_path / "ds")) as writer:
        writer.write({"a": 1})
    reader = load_readers(str(tmp_path / "ds"))[0]
    data = tmp_path / "ds" / "shard.00000.json"
    os.remove(tmp_path / "ds" / "shard.00000.json.meta")
    data.write_text("the user's notes, not the shard")
    assert reader.set_up_local(listing(tmp_path / "ds"), False) == 0
    assert data.read_text() == "the user's notes, not the shard"


def test_a_file_behind_a_symlinked_directory_is_never_deleted(tmp_path) -> None:
    """An index naming ``link/secrets.env``, with ``link`` a symlink out of the folder, deleted
    the file the link led to."""
    from streaming.format.shard_files import RAW, ShardFiles

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secrets.env").write_bytes(b"k" * 8)
    root = tmp_path / "ds"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "own.bin").write_bytes(b"o" * 8)
    os.symlink(outside, root / "link")
    files = ShardFiles(str(root), ((FileInfo("link/secrets.env", 8, {}), None),
                                   (FileInfo("sub/own.bin", 8, {}), None)), None)
    assert files.remove(RAW) == 8  # its own file only
    assert (outside / "secrets.env").exists() and not (root / "sub" / "own.bin").exists()


def test_evict_counts_index_sizes_of_present_files(zipped) -> None:
    root, reader = zipped
    assert reader[0] == {"a": 0}
    os.remove(root / "shard.00000.mds.zstd")
    assert reader.evict() == reader.get_raw_size()
    assert reader.evict() == 0
    assert os.listdir(root) == ["index.json"]


def test_split_names_dirname(tmp_path) -> None:
    with MDSWriter(columns={"a": "int"}, out=str(tmp_path / "train")) as writer:
        writer.write({"a": 5})
    reader = load_readers(str(tmp_path), "train")[0]
    assert reader.dirname == str(tmp_path) and reader.split == "train" and reader[0] == {"a": 5}
    assert reader.evict() > 0 and os.listdir(tmp_path / "train") == ["index.json"]


def test_string_size_limit_and_negative() -> None:
    info = FileInfo("shard.00000.mds", 1, {})
    reader = MDSReader("/d", None, ["int"], ["a"], [8], None, [], info, 1, "1kb", None)
    assert reader.size_limit == 1024
    with pytest.raises(ValueError, match="must be greater than zero"):
        MDSReader("/d", None, ["int"], ["a"], [8], None, [], info, 1, -1, None)


class Owner:
    def __init__(self) -> None:
        self.dropped = 0

    def drop(self) -> None:
        self.dropped += 1


def test_mapping_registry_drops_oldest_and_holds_owners_weakly() -> None:
    reg = MappingRegistry(capacity=2)
    owners = [Owner() for _ in range(4)]
    for owner in owners:
        reg.opened(owner.drop)
    assert [o.dropped for o in owners] == [1, 1, 0, 0] and len(reg) == 2
    reg.closed(owners[2])
    assert len(reg) == 1
    del owners[3]  # a discarded owner is never called back, nor kept alive
    reg.opened(Owner().drop)
    reg.opened(Owner().drop)
    assert len(reg) == 2
    with pytest.raises(ValueError):
        reg.capacity = 0


@pytest.mark.parametrize("size", [0, 100, READ_BELOW - 1, READ_BELOW, 3 * READ_BELOW + 5])
def test_small_files_are_read_and_large_ones_mapped_with_the_same_bytes(tmp_path,
                                                                        size: int) -> None:
    """A few-KB shard costs less read than mapped (no mapping to set up, fault in and tear
    down); either way the caller gets the file's bytes and its identity, and neither follows the
    file once it is deleted."""
    data = os.urandom(size)
    path = tmp_path / "shard.mds"
    path.write_bytes(data)
    buf, identity = map_file_identified(str(path))
    assert isinstance(buf, bytes if size < READ_BELOW else mmap.mmap)
    assert bytes(buf) == data
    assert identity[1] == os.stat(path).st_ino and identity[2] == size
    os.remove(path)
    assert bytes(buf) == data


def test_a_fifo_where_a_shard_should_be_is_refused_not_waited_on(tmp_path) -> None:
    os.mkfifo(tmp_path / "shard.mds")
    with pytest.raises(NotARegularFileError, match="a FIFO"):
        map_file_identified(str(tmp_path / "shard.mds"))


def test_a_regular_file_descriptor_is_handed_over_blocking(tmp_path) -> None:
    """Opened without blocking (a FIFO must not hang the open), then made blocking again
    before any read: a FUSE mount may honour O_NONBLOCK on a regular file's reads."""
    from streaming.regular_files import open_regular_fd

    (tmp_path / "shard.mds").write_bytes(b"abc")
    fd, info = open_regular_fd(str(tmp_path / "shard.mds"))
    try:
        assert os.get_blocking(fd) and info.st_size == 3
    finally:
        os.close(fd)
