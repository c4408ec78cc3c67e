"""MDS shards: the spec's golden bytes, exact shard boundaries, round trips, corrupt files."""

from __future__ import annotations

import json
import mmap
import os
import pickle
from decimal import Decimal

import numpy as np
import pytest
from formats_support import datasets, materialise, read_all, same, scratch_dir
from hypothesis import given, settings, strategies as st

from streaming.errors import ShardFormatError, ShardSizeMismatchError, UnsafeTypeError
from streaming.format import MDSReader, MDSWriter, load_readers
from streaming.format.fileio import open_mappings
from streaming.format.mds import reader as mds_reader

GOLDEN_HEAD = "02000000dd000000f80000000f010000"
GOLDEN_SAMPLES = (
    "0200000009000000" + b"hi".hex() + (5).to_bytes(8, "little").hex() + "080103010002000300"
    + "0300000004000000" + b"xyz".hex() + (-1).to_bytes(8, "little", signed=True).hex()
    + "04010700"
)


def test_golden_271_byte_shard(tmp_path) -> None:
    with MDSWriter(columns={"c": "ndarray:int16", "a": "str", "b": "int"}, out=str(tmp_path),
                   size_limit=None) as writer:
        writer.write({"a": "hi", "b": 5, "c": np.array([[1, 2, 3]], np.int16)})
        writer.write({"a": "xyz", "b": -1, "c": np.array([7], np.int16)})
    data = (tmp_path / "shard.00000.mds").read_bytes()
    assert len(data) == 271
    assert data[:16].hex() == GOLDEN_HEAD
    config = json.loads(data[16:16 + 205])
    assert config == {"column_encodings": ["str", "int", "ndarray:int16"],
                      "column_names": ["a", "b", "c"], "column_sizes": [None, 8, None],
                      "compression": None, "format": "mds", "hashes": [], "size_limit": None,
                      "version": 2}
    assert data[16:16 + 205] == json.dumps(config, sort_keys=True).encode()
    assert data[16 + 205:].hex() == GOLDEN_SAMPLES
    assert (tmp_path / "index.json").read_text() == (
        '{"shards": [{"column_encodings": ["str", "int", "ndarray:int16"], "column_names": '
        '["a", "b", "c"], "column_sizes": [null, 8, null], "compression": null, "format": "mds", '
        '"hashes": [], "raw_data": {"basename": "shard.00000.mds", "bytes": 271, "hashes": {}}, '
        '"samples": 2, "size_limit": null, "version": 2, "zip_data": null}], "version": 2}'
    )
    reader = load_readers(str(tmp_path))[0]
    assert isinstance(reader, MDSReader)
    first = reader[0]
    assert first["a"] == "hi" and first["b"] == 5 and first["c"].tolist() == [[1, 2, 3]]
    assert bytes(reader.get_sample_data(1)) == bytes.fromhex(GOLDEN_SAMPLES)[27:]


@pytest.mark.filterwarnings("ignore:A sample of")
@pytest.mark.parametrize("limit", [100, 1000, 4096, "1kb", 10_000])
def test_uniform_samples_per_shard_formula(tmp_path, limit: object) -> None:
    with MDSWriter(columns={"b": "bytes"}, out=str(tmp_path), size_limit=limit) as writer:
        for _ in range(700):
            writer.write({"b": b"0123456789"})
    limit_bytes = 1024 if limit == "1kb" else limit
    per_shard = (limit_bytes - 8 - len(writer.config_data)) // (4 + 10 + 4)
    counts = [s["samples"] for s in writer.shards]
    if per_shard <= 0:  # every sample overflows: the reference's empty first shard, then 1 each
        assert counts == [0] + [1] * 700
    else:
        assert counts[:-1] == [per_shard] * (len(counts) - 1) and sum(counts) == 700
        assert 0 < counts[-1] <= per_shard


@pytest.mark.filterwarnings("ignore:A sample of")
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=60), st.integers(1, 1500))
def test_boundaries_follow_the_reference_arithmetic(lengths: list[int], limit: int) -> None:
    with scratch_dir() as out:
        with MDSWriter(columns={"b": "bytes"}, out=out, size_limit=limit, exist_ok=True) as w:
            for n in lengths:
                w.write({"b": b"x" * n})
            shard_start = w.extra_bytes_per_shard
        counts, current, size = [], 0, shard_start
        for n in lengths:  # the spec's rule: cut before a sample when limit < size + cost
            cost = 4 + n + 4
            if limit < size + cost:
                counts.append(current)
                current, size = 0, shard_start
            current += 1
            size += cost
        counts.append(current)
        assert [s["samples"] for s in w.shards] == counts
        for entry in w.shards:
            assert os.path.getsize(os.path.join(out, entry["raw_data"]["basename"])) == (
                entry["raw_data"]["bytes"])


@pytest.mark.filterwarnings("ignore:A sample of")
@settings(max_examples=40, deadline=None)
@given(datasets(), st.sampled_from([None, "zstd", "gz:1", "br:1", "snappy", "bz2:1"]),
       st.sampled_from([None, 200, 1000, "1kb"]), st.sampled_from([[], ["md5"], ["xxh3_64"]]))
def test_round_trip(data: tuple, compression: str | None, limit: object,
                    hashes: list[str]) -> None:
    columns, samples = data
    with scratch_dir() as out:
        with MDSWriter(columns=columns, out=out, size_limit=limit, compression=compression,
                       hashes=hashes, exist_ok=True) as writer:
            for sample in samples:
                writer.write(sample)
        materialise(out)
        by_index, in_order = read_all(out)
        assert len(by_index) == len(samples)
        for got, again, want in zip(by_index, in_order, samples):
            if "col_str_decimal" in want:  # Decimal round-trips by value, not by repr
                assert Decimal(got.pop("col_str_decimal")) == want["col_str_decimal"]
                again.pop("col_str_decimal")
                want = {k: v for k, v in want.items() if k != "col_str_decimal"}
            assert same(got, want), (got, want)
            assert same(again, want), (again, want)


def _write(out: str, n: int = 40, **kwargs: object) -> None:
    with MDSWriter(columns={"id": "int", "t": "ndarray:uint16"}, out=out, **kwargs) as writer:
        for i in range(n):
            writer.write({"id": i, "t": np.arange(i % 7 + 1, dtype=np.uint16)})


def test_sequential_matches_random_access_across_blocks(tmp_path) -> None:
    with MDSWriter(columns={"id": "int", "v": "ndarray:uint8:4", "s": "str"},
                   out=str(tmp_path), size_limit=None) as writer:
        for i in range(9000):  # > one 4096-sample block, uniform then ragged layouts
            writer.write({"id": i, "v": np.full(4, i % 256, np.uint8),
                          "s": "ab" if i < 5000 else "x" * (i % 3)})
    reader = load_readers(str(tmp_path))[0]
    assert same(list(reader), [reader[i] for i in range(reader.samples)])
    assert same(reader.decode_range(4090, 4100), reader[4090:4100])
    assert list(reader.iter_range(8990, 10**6))[-1]["id"] == 8999
    assert list(reader.iter_range(5, 5)) == []


@pytest.mark.parametrize("count", [1, 63, 64, 100])
def test_a_dataset_without_columns_reads_as_many_empty_samples(tmp_path, count: int) -> None:
    """From 64 samples on, a block of zero-byte samples went to the gathered path, whose
    `zip()` of no columns yields nothing: in-order reading gave no samples at all."""
    with MDSWriter(columns={}, out=str(tmp_path)) as writer:
        for _ in range(count):
            writer.write({})
    reader = load_readers(str(tmp_path))[0]
    assert list(reader) == [{}] * count == [reader[i] for i in range(count)]
    assert list(reader.iter_range(1, count)) == [{}] * (count - 1)


def test_block_samples_are_bounded_by_bytes_and_count() -> None:
    assert mds_reader.block_samples(0) == mds_reader.block_samples(1) == 4096
    assert mds_reader.block_samples(2060) == 4096  # tokens: the count bound
    assert mds_reader.block_samples(100_000) == (64 << 20) // 100_000  # images: the byte bound
    assert mds_reader.block_samples(1 << 30) == 1  # a sample larger than a block: one at a time


def test_sequential_blocks_of_wide_samples(tmp_path, monkeypatch) -> None:
    with MDSWriter(columns={"image": "bytes", "label": "int"}, out=str(tmp_path),
                   size_limit=None) as writer:
        for i in range(60):  # uniform 1000-byte images, then ragged sizes
            size = 1000 if i < 35 else 500 + 37 * i
            writer.write({"image": bytes([i]) * size, "label": i})
    monkeypatch.setattr(mds_reader, "_BLOCK_BYTES", 4000)  # ~4 samples per block
    ranges: list[tuple[int, int]] = []
    real_prefetch = mds_reader.prefetch
    monkeypatch.setattr(mds_reader, "prefetch",
                        lambda view, a, b: ranges.append((a, b)) or real_prefetch(view, a, b))
    reader = load_readers(str(tmp_path))[0]
    expected = [reader[i] for i in range(reader.samples)]
    for start, stop in [(0, 60), (3, 41), (34, 36), (59, 60)]:
        ranges.clear()
        got = list(reader.iter_range(start, stop))
        assert got == expected[start:stop]
        assert all(type(item["image"]) is bytes for item in got)  # a copy, never a view
        assert len(ranges) >= (stop - start) // 4
        assert max(b - a for a, b in ranges) <= 4000 + 3000  # one block's bytes, ragged tail
    assert same(reader.decode_range(30, 40), reader[30:40])


def test_sample_data_is_zero_copy(tmp_path) -> None:
    _write(str(tmp_path))
    reader = load_readers(str(tmp_path))[0]
    data = reader.get_sample_data(3)
    assert isinstance(data, memoryview) and data.readonly
    assert reader.decode_sample(bytes(data))["id"] == 3
    array = reader[6]["t"]
    assert array.tolist() == list(range(7)) and array.base is None  # its own values


def _ends_in_a_mapping(array: np.ndarray) -> bool:
    base: object = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None) or getattr(base, "obj", None)
    return base is not None


@pytest.mark.parametrize("columns", [{"t": "ndarray:uint16"}, {"t": "ndarray:uint16:4"},
                                     {"t": "ndarray"}])
def test_kept_arrays_do_not_pin_or_follow_the_shard_file(tmp_path, columns: dict) -> None:
    """Samples a user keeps (a validation subset, `list(dataset)`) own their arrays: they
    neither hold one mapping (and, before Python 3.13, one descriptor) per shard, nor change
    when a tool rewrites a shard file in place."""
    with MDSWriter(columns=columns, out=str(tmp_path), size_limit=200) as writer:
        for i in range(60):
            writer.write({"t": np.full(4, i, np.uint16)})
    readers = load_readers(str(tmp_path))
    assert len(readers) > 10
    kept = [r[0]["t"] for r in readers] + [s["t"] for r in readers for s in r]
    assert not any(_ends_in_a_mapping(a) for a in kept)
    first = os.path.join(str(tmp_path), readers[0].raw_data.basename)
    with open(first, "r+b") as f:  # in place, as `cp` or `rsync --inplace` would
        data = bytearray(f.read())
        data[-8:] = b"\xff" * 8
        f.seek(0)
        f.write(data)
    assert kept[0].tolist() == [0, 0, 0, 0]


def test_index_errors(tmp_path) -> None:
    _write(str(tmp_path), 5)
    reader = load_readers(str(tmp_path))[0]
    for bad in (5, 99, -6):
        with pytest.raises(IndexError, match=f"Relative sample index {bad} is not present in "
                                             "the shard.00000.mds file."):
            reader.get_item(bad)
    assert reader[-1]["id"] == 4


def test_missing_file_is_file_not_found(tmp_path) -> None:
    _write(str(tmp_path), 5)
    reader = load_readers(str(tmp_path))[0]
    os.remove(tmp_path / "shard.00000.mds")
    with pytest.raises(FileNotFoundError):
        reader.get_item(0)


@pytest.mark.parametrize("keep", [0, 3, 7, 20, 100, -1])
def test_truncated_shard(tmp_path, keep: int) -> None:
    """Caught by its size (the index's) before any byte is read; a shard whose index was made
    to agree with the cut (only a hand-edited index would) fails the header checks instead."""
    _write(str(tmp_path), 20)
    path = tmp_path / "shard.00000.mds"
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    reader = load_readers(str(tmp_path))[0]
    with pytest.raises(ShardSizeMismatchError,
                       match=f"Shard file {path} has {len(data[:keep])} bytes, but the index "
                             f"says {len(data)}"):
        reader.get_item(0)
    if len(data[:keep]) < 4 + 4 * 21:  # too small for its own offsets: the index is refused
        return
    index = json.loads((tmp_path / "index.json").read_text())
    index["shards"][0]["raw_data"]["bytes"] = len(data[:keep])
    (tmp_path / "index.json").write_text(json.dumps(index))
    reader = load_readers(str(tmp_path))[0]
    with pytest.raises(ShardFormatError, match=f"Shard file {path} is corrupted"):
        reader.get_item(0)


def test_inconsistent_header(tmp_path) -> None:
    _write(str(tmp_path), 20)
    path = tmp_path / "shard.00000.mds"
    data = bytearray(path.read_bytes())
    data[0:4] = (25).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(ShardFormatError, match="header says 25 samples, the index 20"):
        load_readers(str(tmp_path))[0].get_item(0)
    data[0:4] = (20).to_bytes(4, "little")
    data[8:12] = (10**6).to_bytes(4, "little")  # an offset past the end / out of order
    path.write_bytes(bytes(data))
    with pytest.raises(ShardFormatError, match="out of order or past"):
        list(load_readers(str(tmp_path))[0])


def test_sample_lengths_that_do_not_add_up(tmp_path) -> None:
    _write(str(tmp_path), 3)
    reader = load_readers(str(tmp_path))[0]
    data = bytearray(reader.get_sample_data(1))
    data[0:4] = (99).to_bytes(4, "little")
    with pytest.raises(ShardFormatError):
        reader.decode_sample(bytes(data))
    with pytest.raises(ShardFormatError):
        reader.decode_sample(b"\x01")


def test_validate_unsafe_types(tmp_path) -> None:
    with MDSWriter(columns={"a": "int", "obj": "pkl"}, out=str(tmp_path)) as writer:
        writer.write({"a": 1, "obj": [1]})
    reader = load_readers(str(tmp_path))[0]
    with pytest.raises(UnsafeTypeError) as info:
        reader.validate(allow_unsafe_types=False)
    assert str(info.value) == ("Column obj contains an unsafe type: pkl. To proceed anyway, set "
                               "``allow_unsafe_types=True``.")
    assert isinstance(info.value, ValueError)
    reader.validate(allow_unsafe_types=True)
    assert reader[0] == {"a": 1, "obj": [1]}


def test_evict_and_reopen(tmp_path) -> None:
    _write(str(tmp_path), 10)
    reader = load_readers(str(tmp_path))[0]
    backup = (tmp_path / "shard.00000.mds").read_bytes()
    held = reader[2]["t"]  # a zero-copy view must survive eviction
    assert reader.evict() == len(backup)
    assert os.listdir(tmp_path) == ["index.json"]
    assert held.tolist() == [0, 1, 2]
    with pytest.raises(FileNotFoundError):
        reader[0]
    (tmp_path / "shard.00000.mds").write_bytes(backup)
    assert reader[9]["id"] == 9


def test_close_picks_up_a_replaced_file(tmp_path) -> None:
    _write(str(tmp_path / "a"), 10)
    _write(str(tmp_path / "b"), 10, size_limit=None)
    with MDSWriter(columns={"id": "int", "t": "ndarray:uint16"}, out=str(tmp_path / "c")) as w:
        for i in range(10):  # the size of a's shard (one of another size is refused)
            w.write({"id": 100 + i, "t": np.zeros(i % 7 + 1, np.uint16)})
    reader = load_readers(str(tmp_path / "a"))[0]
    assert reader[0]["id"] == 0
    os.replace(tmp_path / "c" / "shard.00000.mds", tmp_path / "a" / "shard.00000.mds")
    assert reader[0]["id"] == 0  # still the mapped (old) file
    reader.close()
    assert reader[0]["id"] == 100


def test_pickled_reader_remaps(tmp_path) -> None:
    _write(str(tmp_path), 10)
    reader = load_readers(str(tmp_path))[0]
    assert reader[1]["id"] == 1
    clone = pickle.loads(pickle.dumps(reader))
    assert clone[7]["id"] == 7 and same(list(clone), list(reader))


@pytest.fixture
def small_registry():
    before = open_mappings.capacity
    open_mappings.capacity = 3
    yield open_mappings
    open_mappings.capacity = before


def test_mapping_budget_bounds_open_files(tmp_path, small_registry) -> None:
    _write(str(tmp_path), 400, size_limit=300)
    readers = load_readers(str(tmp_path))
    assert len(readers) > 20
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(2):
        ids = [r[0]["id"] for r in readers]
    assert ids == sorted(ids) and len(set(ids)) == len(readers)
    assert len(small_registry) <= 3
    if fds is not None:
        assert len(os.listdir("/proc/self/fd")) <= fds + 3
    assert sum(r._state is not None for r in readers) <= 3


def test_mapping_budget_bounds_open_files_of_column_reads(tmp_path, small_registry) -> None:
    """`read_columns` (the loader's batched path) caches a rows view per mapping: dropped with
    it, or every shard read stayed mapped, one descriptor each, until EMFILE."""
    _write(str(tmp_path), 400, size_limit=300)
    readers = load_readers(str(tmp_path))
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    ids = [int(r.read_columns(np.array([0]))["id"][0]) for r in readers]
    assert ids == sorted(ids) and len(set(ids)) == len(readers) > 20
    assert sum(r._rows is not None for r in readers) <= 3
    if fds is not None:
        assert len(os.listdir("/proc/self/fd")) <= fds + 3


def test_undecodable_bytes_in_a_bulk_read_name_the_file_and_run(tmp_path) -> None:
    from streaming import StreamingDataset

    with MDSWriter(out=str(tmp_path), columns={"id": "int", "text": "str"}) as writer:
        for i in range(64):
            writer.write({"id": i, "text": f"row-{i:04d}"})
    path = tmp_path / "shard.00000.mds"
    path.write_bytes(path.read_bytes().replace(b"row-0040", b"row-\xff\xfe40"))
    reader = load_readers(str(tmp_path))[0]
    from streaming import LocalDataset  # its chain of bulk blocks, and batches of columns

    reads = [
        (lambda: reader.get_item(40), r"Sample 40 of shard file .*shard.00000.mds cannot be decoded: "
                                     r"UnicodeDecodeError"),
        (reader.decode_range, r"A sample in 0..63 of shard file .*shard.00000.mds cannot be "
                              r"decoded"),
        (lambda: list(StreamingDataset(local=str(tmp_path), batch_size=8)),
         r"shard.00000.mds cannot be decoded: UnicodeDecodeError"),  # the epoch's bulk runs
        (lambda: list(LocalDataset(str(tmp_path))),
         r"A sample in 0..63 of shard file .*shard.00000.mds cannot be decoded"),
        (lambda: list(StreamingDataset(local=str(tmp_path), batch_size=8).batches(8)),
         r"shard.00000.mds is corrupted: a sample does not decode: UnicodeDecodeError"),
    ]
    for read, message in reads:
        # Also the decoder's own type, which the reference let through: an `except
        # UnicodeDecodeError:` written for it still catches ours, with its fields.
        with pytest.raises(UnicodeDecodeError, match=message) as caught:
            read()
        assert isinstance(caught.value, ShardFormatError)
        assert caught.value.start == 4 and caught.value.reason == "invalid start byte"
    assert reader.get_item(39)["text"] == "row-0039"  # the rest of the shard still reads


def _mapped_rss_kb(path: str) -> int:
    """Resident kB of this process's mappings of `path` (from /proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            parts = line.split()
            if not parts[0].endswith(":"):
                inside = parts[-1] == path
            elif inside and parts[0] == "Rss:":
                total += int(parts[1])
    return total


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc")
def test_in_order_reads_give_back_the_pages_they_consumed(tmp_path) -> None:
    rows = 40_000
    with MDSWriter(out=str(tmp_path), columns={"v": "ndarray:int32:64"},
                   size_limit=1 << 26) as writer:
        for i in range(rows):
            writer.write({"v": np.full(64, i, np.int32)})
    path = str(tmp_path / "shard.00000.mds")
    reader = load_readers(str(tmp_path))[0]
    samples = list(reader.iter_range())  # decoded arrays may view the mapping
    assert os.path.getsize(path) > 10_000_000
    assert _mapped_rss_kb(path) < 1024, "the consumed blocks stayed resident"
    assert all(int(s["v"][0]) == i and int(s["v"][-1]) == i for i, s in enumerate(samples))
    assert reader.get_item(rows // 2)["v"][3] == rows // 2  # the mapping still reads


@pytest.mark.parametrize("views", [False, True])
def test_values_longer_than_one_read_call_are_read_whole(tmp_path, monkeypatch,
                                                         views: bool) -> None:
    """Linux moves at most 0x7ffff000 bytes per `pread`/`preadv`: a value over 2 GiB read in
    one call came back short and a good shard was reported corrupt (and its cached copy
    deleted). The kernel's cap is played here by a cap of 5,000 bytes per call."""
    from streaming import LocalDataset, StreamingDataset

    rng = np.random.default_rng(0)
    values = [rng.bytes(int(n)) for n in rng.integers(20_000, 60_000, 40)]
    with MDSWriter(out=str(tmp_path), columns={"id": "int", "blob": "bytes"}) as writer:
        for i, value in enumerate(values):
            writer.write({"id": i, "blob": value})
    pread, preadv = os.pread, os.preadv
    calls = []

    def capped_pread(fd: int, n: int, offset: int) -> bytes:
        calls.append(n)
        return pread(fd, min(n, 5_000), offset)

    def capped_preadv(fd: int, buffers: list, offset: int) -> int:
        calls.append(len(buffers[0]))
        return preadv(fd, [memoryview(buffers[0])[:5_000]], offset)

    monkeypatch.setattr(os, "pread", capped_pread)
    monkeypatch.setattr(os, "preadv", capped_preadv)
    for dataset in (StreamingDataset(local=str(tmp_path), batch_size=8, bytes_as_views=views),
                    LocalDataset(str(tmp_path))):
        assert [bytes(s["blob"]) for s in dataset] == values
    assert len(calls) > 2 * len(values)  # the capped calls did the reads
