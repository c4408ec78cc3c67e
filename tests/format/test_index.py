"""`streaming.format.index`: parsing, path safety and byte-exact writing of index.json."""

from __future__ import annotations

import json

import pytest

from streaming.errors import IndexFormatError, UnsafePathError
from streaming.format import load_readers, reader_from_json
from streaming.format.index import (
    CorruptIndexError,
    FileInfo,
    ShardEntry,
    check_basename,
    dump_index,
    get_index_basename,
    load_index,
    parse_index,
    read_index_objects,
    shard_path,
)

# The spec's example entry (MDS, columns a:str, b:int, c:ndarray:int16, two samples).
EXAMPLE = (
    '{"shards": [{"column_encodings": ["str", "int", "ndarray:int16"], "column_names": ["a", "b", '
    '"c"], "column_sizes": [null, 8, null], "compression": null, "format": "mds", "hashes": [], '
    '"raw_data": {"basename": "shard.00000.mds", "bytes": 271, "hashes": {}}, "samples": 2, '
    '"size_limit": null, "version": 2, "zip_data": null}], "version": 2}'
)


def test_index_basename() -> None:
    assert get_index_basename() == "index.json"


def test_round_trip_is_byte_exact() -> None:
    entries = parse_index(EXAMPLE)
    assert entries == [ShardEntry.from_json(s) for s in read_index_objects(EXAMPLE)]
    assert dump_index([e.to_json() for e in entries]) == EXAMPLE
    assert entries[0].raw_data == FileInfo("shard.00000.mds", 271, {})
    assert entries[0].config["column_sizes"] == [None, 8, None]
    assert list(entries[0].files()) == [entries[0].raw_data]


def test_split_entry_round_trip() -> None:
    obj = {"format": "json", "version": 2, "samples": 3, "compression": "zstd", "hashes": ["md5"],
           "size_limit": 100, "columns": {"a": "int"}, "newline": "\n",
           "raw_data": {"basename": "shard.00000.json", "bytes": 9, "hashes": {"md5": "x"}},
           "zip_data": {"basename": "shard.00000.json.zstd", "bytes": 7, "hashes": {}},
           "raw_meta": {"basename": "shard.00000.json.meta", "bytes": 20, "hashes": {}},
           "zip_meta": {"basename": "shard.00000.json.meta.zstd", "bytes": 12, "hashes": {}}}
    entry = ShardEntry.from_json(obj)
    assert entry.to_json() == obj
    assert [f.basename for f in entry.files()] == [
        "shard.00000.json.meta", "shard.00000.json.meta.zstd", "shard.00000.json",
        "shard.00000.json.zstd"]


@pytest.mark.parametrize("text", ["", "{", '{"version": 2, "shards": [', "not json", "\x00"])
def test_corrupt_index_names_the_file(tmp_path, text: str) -> None:
    path = tmp_path / "index.json"
    path.write_text(text)
    with pytest.raises(json.JSONDecodeError) as info:
        load_index(str(path))
    assert isinstance(info.value, IndexFormatError) and isinstance(info.value, CorruptIndexError)
    assert str(info.value).startswith(f"Index file at {path} is empty or corrupted. ")


def test_non_utf8_index(tmp_path) -> None:
    path = tmp_path / "index.json"
    path.write_bytes(b'{"version": 2, "shards": [], "x": "\xff"}')
    with pytest.raises(IndexFormatError, match="is empty or corrupted"):
        load_index(str(path))


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        ({"version": 3, "shards": []},
         "Unsupported streaming data version: 3. Expected version 2."),
        ({"shards": []}, "missing the field `version`"),
        ({"version": 2}, "`shards` list"),
        ({"version": 2, "shards": [1]}, "`shards` list"),
        ([1, 2], "Expected a JSON object"),
    ],
)
def test_bad_top_level(obj: object, match: str) -> None:
    with pytest.raises(IndexFormatError, match=match):
        parse_index(json.dumps(obj))


def test_missing_index_file(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        load_readers(str(tmp_path))


def _entry(**changes: object) -> dict:
    obj = read_index_objects(EXAMPLE)[0]
    obj.update(changes)
    return {k: v for k, v in obj.items() if v is not _DROP}


_DROP = object()


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"samples": _DROP}, "missing the field `samples`"),
        ({"samples": -1}, "negative sample count"),
        ({"samples": "2"}, "malformed `samples`"),
        ({"samples": True}, "malformed `samples`"),
        ({"raw_data": _DROP}, "missing the field `raw_data`"),
        ({"raw_data": {"basename": "a", "bytes": "1"}}, "malformed `bytes`"),
        ({"raw_data": {"bytes": 1}}, "missing the field `basename`"),
        ({"raw_data": {"basename": "a", "bytes": 1, "hashes": []}}, "malformed `hashes`"),
        ({"hashes": "md5"}, "malformed `hashes`"),
        ({"compression": 3}, "malformed `compression`"),
        ({"version": 1}, "Unsupported streaming data version: 1"),
        ({"column_sizes": _DROP}, r"missing the field\(s\) \['column_sizes'\]"),
        ({"format": "orc"}, "Unsupported data format"),
        ({"format": "json", "columns": {}, "newline": "\n"},
         r"missing the field\(s\) \['raw_meta'\]"),
        ({"raw_data": "shard.00000.mds"}, "malformed `raw_data`"),
    ],
)
def test_bad_entries(changes: dict, match: str) -> None:
    with pytest.raises(IndexFormatError, match=match):
        reader_from_json("/data", None, _entry(**changes))


def test_unknown_keys_are_tolerated() -> None:
    reader = reader_from_json("/data", "train", _entry(future_key=1, another={"x": 1}))
    assert reader.samples == 2 and reader.split == "train"
    assert reader.column_sizes == [None, 8, None]


@pytest.mark.parametrize(
    "name",
    ["/etc/passwd", "../x.mds", "a/../../x.mds", "a/..", "..", "C:\\x.mds", "c:x", "\\\\srv\\x",
     "a\\..\\..\\x", "", "a\x00b"],
)
def test_unsafe_basenames(name: str) -> None:
    with pytest.raises(UnsafePathError):
        check_basename(name)
    with pytest.raises(UnsafePathError):
        reader_from_json("/data", None, _entry(raw_data={"basename": name, "bytes": 1}))
    with pytest.raises(UnsafePathError):
        ShardEntry.from_json(_entry(zip_data={"basename": name, "bytes": 1, "hashes": {}}))


@pytest.mark.parametrize("name", ["shard.00000.mds", "p0/shard.00000.mds", "./a/b.mds", "a..b"])
def test_safe_basenames(name: str) -> None:
    assert check_basename(name) == name
    assert shard_path("/d", "s", name) == f"/d/s/{name}"
    assert shard_path("/d", None, name) == f"/d/{name}"


def _index(*entries: dict) -> str:
    return dump_index(list(entries))


def test_a_file_listed_twice_is_refused() -> None:
    """Two entries naming one file would yield its samples twice per epoch."""
    first = _entry()
    second = _entry(raw_data={"basename": "shard.00001.mds", "bytes": 271, "hashes": {}},
                    zip_data={"basename": "shard.00000.mds", "bytes": 9, "hashes": {}})
    assert len(parse_index(_index(first, _entry(raw_data={"basename": "shard.00001.mds",
                                                         "bytes": 271, "hashes": {}})))) == 2
    spelt = _entry(raw_data={"basename": "./shard.00000.mds", "bytes": 271, "hashes": {}})
    for twice in (_index(first, first), _index(first, second), _index(first, spelt)):
        with pytest.raises(IndexFormatError, match=r"lists the file '(\./)?shard.00000.mds' "
                                                   r"more than once") as info:
            parse_index(twice, "/data/index.json")
        assert "/data/index.json" in str(info.value)


@pytest.mark.parametrize("samples", [10**12, 66])
def test_more_samples_than_bytes_can_hold_is_refused(samples: int) -> None:
    """271 bytes hold at most 65 MDS samples (4 + 4 * (n + 1) header bytes), so 66 is refused
    at once, as is 10**12 (which would otherwise ask numpy for terabytes)."""
    with pytest.raises(IndexFormatError, match=rf"says {samples} samples, but shard.00000.mds "
                                               rf"has 271 bytes, fewer than the {4 * samples + 8}"):
        reader_from_json("/data", None, _entry(samples=samples))
    assert reader_from_json("/data", None, _entry(samples=65)).samples == 65


@pytest.mark.parametrize(("text", "said"), [
    ('{"version": 2, "shards": [' + "[" * 100000 + "]" * 100000 + "]}", "RecursionError"),
    ('{"version": 2, "shards": [{"samples": ' + "9" * 5000 + "}]}", "ValueError: Exceeds"),
])
def test_an_index_python_cannot_parse_is_an_index_error(text: str, said: str) -> None:
    """Nesting past the parser's recursion and a number past Python's digit limit escaped as
    a bare RecursionError / ValueError naming no file."""
    from streaming.format.index import parse_index

    with pytest.raises(IndexFormatError, match=rf"Index file at x/index.json is empty or "
                                               rf"corrupted\. {said}"):
        parse_index(text, "x/index.json")


@pytest.mark.parametrize(("field", "value", "kind"), [("column_names", None, TypeError),
                                                      ("size_limit", -1, ValueError)])
def test_fields_a_reader_cannot_take_name_the_shard(tmp_path, field, value, kind) -> None:
    import json as json_module

    from streaming import MDSWriter

    with MDSWriter(out=str(tmp_path), columns={"id": "int"}) as writer:
        writer.write({"id": 1})
    index = json_module.loads((tmp_path / "index.json").read_text())
    index["shards"][0][field] = value
    (tmp_path / "index.json").write_text(json_module.dumps(index))
    from streaming import LocalDataset, StreamingDataset

    for build in (lambda: StreamingDataset(local=str(tmp_path), batch_size=1),
                  lambda: LocalDataset(str(tmp_path))):
        with pytest.raises(IndexFormatError, match=r"Index entry of shard 'shard.00000.mds' "
                                                   r"\(format 'mds'\) is malformed") as info:
            build()
        assert isinstance(info.value, kind)


def test_a_column_named_twice_is_refused(tmp_path) -> None:
    """`column_names: ["id", "id"]` read one column's value under the name, the other's lost."""
    import json as json_module

    from streaming import MDSWriter
    from streaming.format import load_readers

    with MDSWriter(out=str(tmp_path), columns={"id": "int", "t": "str"}) as writer:
        writer.write({"id": 1, "t": "x"})
    index = json_module.loads((tmp_path / "index.json").read_text())
    index["shards"][0]["column_names"] = ["id", "id"]
    (tmp_path / "index.json").write_text(json_module.dumps(index))
    with pytest.raises(IndexFormatError, match=r"malformed: ValueError: `column_names` lists "
                                               r"\['id'\] more than once"):
        load_readers(str(tmp_path))
