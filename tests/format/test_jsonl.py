"""JSON-lines shards: layout, size accounting, round trips and the batched reader."""

from __future__ import annotations

import json
import struct

import pytest
from formats_support import materialise, read_all, scratch_dir
from hypothesis import given, settings, strategies as st

from streaming.errors import ShardFormatError, ShardSizeMismatchError
from streaming.format import JSONReader, JSONWriter, load_readers


def test_layout(tmp_path) -> None:
    with JSONWriter(columns={"n": "int", "s": "str"}, out=str(tmp_path), size_limit=None) as w:
        w.write({"s": "a", "n": 1, "extra": "dropped"})
        w.write({"s": "é", "n": 2})
    data = (tmp_path / "shard.00000.json").read_bytes()
    assert data == b'{"n": 1, "s": "a"}\n{"n": 2, "s": "\\u00e9"}\n'
    meta = (tmp_path / "shard.00000.json.meta").read_bytes()
    assert struct.unpack_from("<4I", meta) == (2, 0, 19, len(data))
    config = {"columns": {"n": "int", "s": "str"}, "compression": None, "format": "json",
              "hashes": [], "newline": "\n", "size_limit": None, "version": 2}
    assert meta[16:] == json.dumps(config, sort_keys=True).encode()
    entry = json.loads((tmp_path / "index.json").read_text())["shards"][0]
    assert entry["raw_meta"] == {"basename": "shard.00000.json.meta", "bytes": len(meta),
                                 "hashes": {}}
    assert entry["zip_meta"] is None and entry["columns"] == {"n": "int", "s": "str"}
    reader = load_readers(str(tmp_path))[0]
    assert isinstance(reader, JSONReader) and reader.newline == "\n"
    assert reader[1] == {"n": 2, "s": "é"}
    assert [f.basename for pair in reader.file_pairs for f in pair if f] == [
        "shard.00000.json.meta", "shard.00000.json"]


def test_only_data_lines_count_against_the_limit(tmp_path) -> None:
    with JSONWriter(columns={"n": "int"}, out=str(tmp_path), size_limit=40) as writer:
        for i in range(10):
            writer.write({"n": i})  # each line is '{"n": i}\n' = 9 bytes
    assert writer.extra_bytes_per_shard == writer.extra_bytes_per_sample == 0
    assert [s["samples"] for s in writer.shards] == [4, 4, 2]


def test_type_and_column_errors(tmp_path) -> None:
    writer = JSONWriter(columns={"n": "int", "f": "float"}, out=str(tmp_path))
    with pytest.raises(AttributeError, match="data should be of type"):
        writer.write({"n": 1.0, "f": 1.0})
    with pytest.raises(AttributeError):
        writer.write({"n": 1, "f": 1})  # an int is not a float column value
    with pytest.raises(KeyError):
        writer.write({"n": 1})
    writer.write({"n": True, "f": 2.5})  # bools pass as ints, as in the reference
    writer.finish()
    assert load_readers(str(tmp_path))[0][0] == {"f": 2.5, "n": True}


@pytest.mark.filterwarnings("ignore:A sample of")
@settings(max_examples=30, deadline=None)
@given(st.lists(st.fixed_dictionaries({"i": st.integers(-2**70, 2**70), "s": st.text(max_size=20),
                                       "f": st.floats(allow_nan=False)}), max_size=30),
       st.sampled_from([None, "zstd", "snappy"]), st.sampled_from(["\n", "\r\n", "|", ""]),
       st.sampled_from([None, 60, 500]))
def test_round_trip(samples: list[dict], compression: str | None, newline: str,
                    limit: int | None) -> None:
    with scratch_dir() as out:
        with JSONWriter(columns={"i": "int", "s": "str", "f": "float"}, out=out,
                        compression=compression, newline=newline, size_limit=limit,
                        exist_ok=True) as writer:
            for sample in samples:
                writer.write(sample)
        materialise(out)
        by_index, in_order = read_all(out)
        assert by_index == in_order == samples


def test_batched_path_falls_back_on_multiline_samples(tmp_path) -> None:
    with JSONWriter(columns={"n": "int"}, out=str(tmp_path)) as writer:
        for i in range(5):
            writer.write({"n": i})
    data_path = tmp_path / "shard.00000.json"
    meta_path = tmp_path / "shard.00000.json.meta"
    lines = [b'{"n": 0}\n', b'{\n"n": 1}\n', b'{"n": 2}\n', b'{"n":\n3}\n', b'{"n": 4}\n']
    data = b"".join(lines)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    meta = meta_path.read_bytes()
    meta_path.write_bytes(struct.pack("<7I", 5, *offsets) + meta[4 + 4 * 6:])
    data_path.write_bytes(data)
    _sizes_to_index(tmp_path)
    reader = load_readers(str(tmp_path))[0]
    assert list(reader) == [{"n": i} for i in range(5)] == reader[:]


def _sizes_to_index(root) -> None:
    """Make index.json give each file its size on disk (a hand-made shard's index would)."""
    index = json.loads((root / "index.json").read_text())
    for shard in index["shards"]:
        for key in ("raw_data", "raw_meta"):
            shard[key]["bytes"] = (root / shard[key]["basename"]).stat().st_size
    (root / "index.json").write_text(json.dumps(index))


def test_truncated_data_file(tmp_path) -> None:
    with JSONWriter(columns={"n": "int"}, out=str(tmp_path)) as writer:
        for i in range(5):
            writer.write({"n": i})
    path = tmp_path / "shard.00000.json"
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(ShardSizeMismatchError, match=r"shard.00000.json has \d+ bytes, but"):
        load_readers(str(tmp_path))[0][0]
    _sizes_to_index(tmp_path)  # the index agreeing with the cut: the offsets tell
    with pytest.raises(ShardFormatError, match="shard.00000.json.meta is corrupted"):
        load_readers(str(tmp_path))[0][0]
    (tmp_path / "shard.00000.json.meta").write_bytes(b"\x05\x00")
    reader = load_readers(str(tmp_path))[0]
    with pytest.raises(ShardSizeMismatchError, match="json.meta has 2 bytes, but the index"):
        list(reader)


def test_missing_meta_is_file_not_found(tmp_path) -> None:
    with JSONWriter(columns={"n": "int"}, out=str(tmp_path)) as writer:
        writer.write({"n": 1})
    (tmp_path / "shard.00000.json.meta").unlink()
    with pytest.raises(FileNotFoundError):
        load_readers(str(tmp_path))[0][0]


def test_empty_shard_from_the_oversize_quirk(tmp_path) -> None:
    with pytest.warns(UserWarning):
        with JSONWriter(columns={"s": "str"}, out=str(tmp_path), size_limit=5) as writer:
            writer.write({"s": "much longer than five bytes"})
    assert [s["samples"] for s in writer.shards] == [0, 1]
    assert (tmp_path / "shard.00000.json").read_bytes() == b""
    readers = load_readers(str(tmp_path))
    assert list(readers[0]) == [] and readers[1][0] == {"s": "much longer than five bytes"}


@pytest.mark.parametrize("damage, kind", [
    (lambda data: data.replace(b'{"a": 2}', b'{"a": \xff}'), UnicodeDecodeError),
    (lambda data: data.replace(b'{"a": 2}\n{"a": 3}', b'{"a": 2}{"a": 3}\n'),
     json.JSONDecodeError),
], ids=["invalid-utf8", "two-records-on-one-line"])
def test_corrupt_lines_name_the_file_and_sample(tmp_path, damage, kind: type) -> None:
    """Our error names the file and sample, and is also the decoder's own type (which the
    reference let through), here and out of a loader's worker process."""
    from streaming import StreamingDataLoader, StreamingDataset

    with JSONWriter(columns={"a": "int"}, out=str(tmp_path)) as writer:
        for i in range(5):
            writer.write({"a": i})
    path = tmp_path / "shard.00000.json"
    path.write_bytes(damage(path.read_bytes()))
    reader = load_readers(str(tmp_path))[0]
    for read in (lambda: reader.get_item(2), lambda: list(reader)):
        with pytest.raises(kind, match=rf"Sample 2 of shard file .*shard.00000.json "
                                       rf"cannot be decoded: {kind.__name__}") as caught:
            read()
        assert isinstance(caught.value, ShardFormatError)
    assert reader.get_item(0) == {"a": 0}  # the rest of the shard still reads
    loader = StreamingDataLoader(StreamingDataset(local=str(tmp_path), batch_size=5),
                                 batch_size=5, num_workers=1)
    with pytest.raises(kind, match="shard.00000.json") as caught:
        list(loader)
    assert isinstance(caught.value, ShardFormatError)


def test_a_newline_that_is_not_a_string_is_refused_at_once(tmp_path) -> None:
    with pytest.raises(TypeError, match="newline must be a str"):
        JSONWriter(columns={"n": "int"}, out=str(tmp_path), newline=None)


def test_lines_that_split_and_join_values_are_read_alone(tmp_path) -> None:
    """Lines `{"a":[1` / `2]}` / `{"b":1},{"c":2}` joined into one array parse to three objects:
    iteration yielded them (and `validate` passed) while `dataset[0]` refused line one."""
    from streaming import LocalDataset

    with JSONWriter(out=str(tmp_path), columns={"a": "int"}) as writer:
        for i in range(3):
            writer.write({"a": i})
    lines = [b'{"a":[1\n', b'2]}\n', b'{"b":1},{"c":2}\n']
    data = b"".join(lines)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    meta_path = tmp_path / "shard.00000.json.meta"
    meta = struct.pack("<I", 3) + struct.pack("<4I", *offsets) + meta_path.read_bytes()[20:]
    (tmp_path / "shard.00000.json").write_bytes(data)
    meta_path.write_bytes(meta)
    index = json.loads((tmp_path / "index.json").read_text())
    shard = index["shards"][0]
    shard["raw_data"].update(bytes=len(data), hashes={})
    shard["raw_meta"].update(bytes=len(meta), hashes={})
    (tmp_path / "index.json").write_text(json.dumps(index))
    dataset = LocalDataset(str(tmp_path))
    with pytest.raises(ShardFormatError, match="Sample 0 of shard file"):
        list(dataset)
    with pytest.raises(ShardFormatError, match="Sample 0 of shard file"):
        dataset[0]
