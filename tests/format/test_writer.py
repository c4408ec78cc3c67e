"""The shared writer: argument checks, output directories and sinks, atomicity, errors."""

from __future__ import annotations

import hashlib
import json
import os
import pickle

import numpy as np
import pytest

from streaming import LocalDataset
from streaming.errors import StreamingError
from streaming.format import CSVWriter, JSONWriter, MDSWriter, load_readers
from streaming.format.compression import decompress
from streaming.storage.sink import Sink, SinkError, open_sink

COLUMNS = {"id": "int", "text": "str"}


def sample(i: int) -> dict:
    return {"id": i, "text": f"sample {i}" * (i % 5)}


def write_all(out: object, n: int = 50, **kwargs: object) -> MDSWriter:
    with MDSWriter(columns=COLUMNS, out=out, **kwargs) as writer:
        for i in range(n):
            writer.write(sample(i))
    return writer


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"compression": "zip"}, ValueError, r"^Invalid compression: zip\.$"),
        ({"compression": "snappy:1"}, ValueError, "Invalid compression: snappy:1."),
        ({"hashes": ["sha1", "md5"]}, ValueError, r"^Hashes must be unique and in sorted order\.$"),
        ({"hashes": ["md5", "nope"]}, ValueError, r"^Invalid hash: nope\.$"),
        ({"hashes": 5}, TypeError, r"^Hashes must be a list of algorithm names, .* got 5 \(int\)"),
        ({"size_limit": -5}, ValueError,
         r"^`size_limit` must be greater than zero, instead, found as -5\.$"),
        ({"size_limit": 2**32}, ValueError, "must be less than 2\\*\\*32, instead, found as "
         "4294967296. This is because sample byte offsets are stored with uint32."),
        ({"size_limit": "4gb"}, ValueError, "must be less than 2\\*\\*32"),
        ({"size_limit": "12kbb"}, ValueError, "Unsupported value/suffix"),
        ({"bogus": 1, "progress_bar": True}, ValueError,
         r"^Invalid Writer argument\(s\): \['bogus'\] $"),
    ],
)
def test_argument_errors_touch_nothing(tmp_path, kwargs: dict, error: type, match: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(error, match=match):
        MDSWriter(columns=COLUMNS, out=str(out), **kwargs)
    assert not out.exists()


def test_bad_column_encoding_touches_nothing(tmp_path) -> None:
    out = tmp_path / "out"
    with pytest.raises(TypeError, match="MDSWriter passed column `x` with encoding `intt` is "
                                        "unsupported. Supported encodings are"):
        MDSWriter(columns={"x": "intt"}, out=str(out))
    assert not out.exists()


@pytest.mark.parametrize("out", [("a",), ("a", "b", "c"), 5, None, ("a", 3)])
def test_bad_out(out: object) -> None:
    with pytest.raises(ValueError, match=r"^Invalid `out` argument\. It is either a string of "
                                         r"local/remote directory or a list of two strings"):
        MDSWriter(columns=COLUMNS, out=out)


def test_defaults_and_attributes(tmp_path) -> None:
    writer = MDSWriter(columns={"b": "int", "a": "ndarray:uint8:2", "c": "bytes"},
                       out=str(tmp_path))
    assert writer.format == "mds"
    assert writer.size_limit == 1 << 26 and writer.compression is None and writer.hashes == []
    assert writer.keep_local is False and writer.local == str(tmp_path) and writer.remote is None
    assert writer.column_names == ["a", "b", "c"]
    assert writer.column_encodings == ["ndarray:uint8:2", "int", "bytes"]
    assert writer.column_sizes == [2, 8, None]
    assert writer.extra_bytes_per_sample == 4
    assert writer.extra_bytes_per_shard == 8 + len(writer.config_data)
    assert json.loads(writer.config_data) == writer.get_config()
    assert writer.new_shard_size == writer.extra_bytes_per_shard and writer.shards == []
    writer.write({"a": b"xy", "b": 1, "c": b"zzz"})
    assert writer.new_samples == [bytes([3, 0, 0, 0]) + b"xy" + (1).to_bytes(8, "little") + b"zzz"]
    writer.finish()


def test_size_limit_parsing_and_none(tmp_path) -> None:
    assert MDSWriter(columns=COLUMNS, out=str(tmp_path / "a"), size_limit="2kb").size_limit == 2048
    assert MDSWriter(columns=COLUMNS, out=str(tmp_path / "b"), size_limit=0).size_limit is None
    writer = write_all(str(tmp_path / "c"), 500, size_limit=None)
    assert len(writer.shards) == 1 and writer.shards[0]["samples"] == 500


def test_exist_ok(tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    with pytest.raises(FileExistsError, match=f"^Directory is not empty: {out}$"):
        MDSWriter(columns=COLUMNS, out=str(out))
    assert (out / "stale.txt").exists()
    write_all(str(out), 3, exist_ok=True)
    assert sorted(os.listdir(out)) == ["index.json", "shard.00000.mds"]
    empty = tmp_path / "empty"
    empty.mkdir()
    write_all(str(empty), 3)  # an existing empty directory is fine without exist_ok
    assert (empty / "index.json").exists()


def test_empty_dataset(tmp_path) -> None:
    write_all(str(tmp_path), 0)
    assert (tmp_path / "index.json").read_text() == '{"shards": [], "version": 2}'
    assert os.listdir(tmp_path) == ["index.json"]


def test_compressed_output_only_and_hashes(tmp_path) -> None:
    writer = write_all(str(tmp_path), 300, compression="zstd:7", hashes=["md5", "xxh64"],
                       size_limit=2000)
    names = sorted(os.listdir(tmp_path))
    assert names[0] == "index.json"
    assert all(n.endswith(".mds.zstd") for n in names[1:])
    assert len(names) - 1 == len(writer.shards) > 2
    for i, entry in enumerate(writer.shards):
        assert entry["raw_data"]["basename"] == f"shard.{i:05}.mds"
        assert entry["zip_data"]["basename"] == f"shard.{i:05}.mds.zstd"
        packed = (tmp_path / entry["zip_data"]["basename"]).read_bytes()
        raw = decompress("zstd:7", packed)
        assert entry["zip_data"]["bytes"] == len(packed) and entry["raw_data"]["bytes"] == len(raw)
        assert entry["raw_data"]["hashes"]["md5"] == hashlib.md5(raw).hexdigest()
        assert entry["zip_data"]["hashes"]["md5"] == hashlib.md5(packed).hexdigest()
        assert set(entry["zip_data"]["hashes"]) == {"md5", "xxh64"}
        assert entry["compression"] == "zstd:7" and entry["hashes"] == ["md5", "xxh64"]


def test_no_temp_files_left(tmp_path) -> None:
    write_all(str(tmp_path), 200, size_limit=500)
    assert not [n for n in os.listdir(tmp_path) if ".tmp" in n]


def test_copy_to_second_directory(tmp_path) -> None:
    local, remote = tmp_path / "local", tmp_path / "remote"
    writer = write_all((str(local), str(remote)), 100, size_limit=600, max_workers=2)
    assert writer.remote == str(remote)
    assert not local.exists()  # keep_local=False: the local side is removed at the end
    readers = load_readers(str(remote))
    assert sum(r.samples for r in readers) == 100
    assert readers[0].get_item(1) == sample(1)


def test_copy_keep_local(tmp_path) -> None:
    local, remote = tmp_path / "local", tmp_path / "remote"
    write_all((str(local), str(remote)), 20, keep_local=True)
    assert sorted(os.listdir(local)) == sorted(os.listdir(remote)) == [
        "index.json", "shard.00000.mds"]


def test_remote_same_as_local_is_kept(tmp_path) -> None:
    write_all((str(tmp_path), str(tmp_path)), 5)
    assert sorted(os.listdir(tmp_path)) == ["index.json", "shard.00000.mds"]


@pytest.mark.parametrize("limit", [300, None])  # the last shard half full / the only shard
def test_exception_in_body_keeps_every_sample_written(tmp_path, limit) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with MDSWriter(columns=COLUMNS, out=str(tmp_path), size_limit=limit) as writer:
            for i in range(100):
                writer.write(sample(i))
            raise RuntimeError("boom")
    assert writer.new_samples == []
    readers = load_readers(str(tmp_path))
    files = sorted(n for n in os.listdir(tmp_path) if n != "index.json")
    assert files == sorted(s["raw_data"]["basename"] for s in writer.shards)
    assert [r for reader in readers for r in reader] == [sample(i) for i in range(100)]


def test_a_bad_sample_keeps_the_samples_written_before_it(tmp_path) -> None:
    with pytest.raises(KeyError):
        with MDSWriter(columns=COLUMNS, out=str(tmp_path), size_limit=300) as writer:
            for i in range(30):
                writer.write(sample(i))
            writer.write({"nope": 1})
    readers = load_readers(str(tmp_path))
    assert [r for reader in readers for r in reader] == [sample(i) for i in range(30)]


def test_a_last_shard_that_cannot_be_written_leaves_the_earlier_ones_indexed(
        tmp_path, monkeypatch) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with MDSWriter(columns=COLUMNS, out=str(tmp_path), size_limit=300) as writer:
            for i in range(100):
                writer.write(sample(i))
            monkeypatch.setattr(writer, "flush_shard", _disk_full)
            raise RuntimeError("boom")
    readers = load_readers(str(tmp_path))
    total = sum(r.samples for r in readers)
    assert 0 < total < 100
    assert [r for reader in readers for r in reader] == [sample(i) for i in range(total)]


def _disk_full() -> None:
    raise OSError(28, "No space left on device")


def test_bad_sample_errors(tmp_path) -> None:
    writer = MDSWriter(columns={"a": "int", "b": "uint16", "n": "ndarray:uint8:3"},
                       out=str(tmp_path))
    with pytest.raises(KeyError) as info:
        writer.write({"a": 1, "n": b"abc"})
    assert info.value.args == ("b",)  # as the reference's, with a clearer text (below)
    with pytest.raises(AttributeError, match="data should be of type"):
        writer.write({"a": "one", "b": 1, "n": b"abc"})
    with pytest.raises(KeyError, match=r"Unexpected data size; was this data typed with the "
                                       r"correct encoding \(ndarray:uint8:3\)\?"):
        writer.write({"a": 1, "b": 1, "n": b"ab"})
    writer.write({"a": 1, "b": 2, "n": b"abc", "ignored": object()})
    writer.finish()
    assert load_readers(str(tmp_path))[0].get_item(0)["n"].tolist() == [97, 98, 99]
    with pytest.raises(RuntimeError, match="already finished"):
        writer.write({"a": 1, "b": 2, "n": b"abc"})
    writer.finish()  # idempotent


def test_pickle_columns_are_writable(tmp_path) -> None:
    with MDSWriter(columns={"obj": "pkl"}, out=str(tmp_path)) as writer:
        writer.write({"obj": {"nested": [1, 2]}})
    reader = load_readers(str(tmp_path))[0]
    assert reader.get_item(0) == {"obj": {"nested": [1, 2]}}


def test_oversize_sample_quirk_and_warning(tmp_path) -> None:
    with pytest.warns(UserWarning, match="does not fit in a shard of size_limit=100"):
        with MDSWriter(columns={"b": "bytes"}, out=str(tmp_path), size_limit=100) as writer:
            writer.write({"b": b"x" * 500})
            writer.write({"b": b"y"})
    # QUIRK kept: an empty shard, then the oversize sample alone, then the rest.
    assert [s["samples"] for s in writer.shards] == [0, 1, 1]
    assert [r.get_item(0)["b"][:1] for r in load_readers(str(tmp_path))[1:]] == [b"x", b"y"]


def test_local_sink_failure_is_reported(tmp_path) -> None:
    remote = tmp_path / "remote"
    local, sink = open_sink((str(tmp_path / "local"), str(remote)))
    assert isinstance(sink, Sink) and sink.remote == str(remote) and not sink.failed
    sink.put(str(tmp_path / "local" / "missing.bin"), "missing.bin")
    with pytest.raises(SinkError, match="One of the threads failed. Check other traceback"):
        sink.finish()
    assert sink.failed
    sink.abort()


def test_json_writer_uses_shared_base(tmp_path) -> None:
    with pytest.raises(TypeError, match="JSONWriter passed column `a` with encoding `bytes`"):
        JSONWriter(columns={"a": "bytes"}, out=str(tmp_path / "x"))
    assert not (tmp_path / "x").exists()


def test_unknown_scheme_is_rejected(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"^Invalid Cloud provider prefix: foo\.$"):
        MDSWriter(columns=COLUMNS, out=(str(tmp_path / "x"), "foo://bucket/path"))
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("writer", [MDSWriter, JSONWriter, CSVWriter])
def test_a_sample_missing_a_column_is_refused_naming_it(tmp_path, writer) -> None:
    with writer(out=str(tmp_path / "out"), columns={"x": "int", "y": "str"}) as w:
        w.write({"x": 1, "y": "a"})
        with pytest.raises(KeyError, match="no value for column.s. 'y': this writer's columns "
                                           "are 'x', 'y'; the sample's keys are 'x'"):
            w.write({"x": 2})
        w.write({"x": 3, "y": "c"})  # the writer goes on: nothing of the bad sample was kept
        with pytest.raises(KeyError) as info:
            w.write({})
    again = pickle.loads(pickle.dumps(info.value))  # as a worker process sends it back
    assert again.args == ("x",) and str(again) == str(info.value)
    assert [s["x"] for s in LocalDataset(local=str(tmp_path / "out"))] == [1, 3]


@pytest.mark.parametrize(("make", "reference_type"), [
    (lambda out: MDSWriter(out=out, columns={"a": "ndarray:foo"}), AssertionError),
    (lambda out: MDSWriter(out=out, columns={"a": "nope"}), TypeError),
    (lambda out: JSONWriter(out=out, columns={"a": "bytes"}), AssertionError),
    (lambda out: CSVWriter(out=out, columns={"a,b": "str"}), AssertionError),
    (lambda out: CSVWriter(out=out, columns={"a": "str"}).write({"a": "x,y"}), AssertionError),
], ids=["malformed ndarray", "unknown", "json bytes", "csv name", "csv value"])
def test_column_errors_are_the_reference_types(tmp_path, make, reference_type) -> None:
    """What the reference raised (bare asserts included), so its callers' `except`s still
    catch ours; ours also say which column and why."""
    with pytest.raises(reference_type) as info:
        make(str(tmp_path / "out"))
    assert isinstance(info.value, StreamingError) and "a" in str(info.value)


@pytest.mark.parametrize(("writer", "columns", "error"), [
    (MDSWriter, {"a": "int", "b": "int", "c": "str"}, AttributeError),
    (MDSWriter, {"a": "int", "b": "ndarray:uint8:3", "c": "str"}, ValueError),
    (JSONWriter, {"a": "int", "b": "int", "c": "str"}, AttributeError),
    (CSVWriter, {"a": "int", "b": "int", "c": "str"}, AttributeError),
])
def test_a_wrongly_typed_value_names_its_column(tmp_path, writer: type, columns: dict,
                                                error: type) -> None:
    """The reference's type errors say what type was expected, not where: with twenty int
    columns a user could not tell which value was wrong. Same exception types as before."""
    bad = "13" if columns["b"] == "int" else np.zeros(4, np.uint8)
    with writer(columns=columns, out=str(tmp_path)) as w:
        with pytest.raises(error, match=r"^Column 'b' \(" + columns["b"].replace("[", r"\[")):
            w.write({"a": 1, "b": bad, "c": "x"})
        w.write({"a": 1, "b": 2 if columns["b"] == "int" else np.zeros(3, np.uint8), "c": "x"})
    assert len(load_readers(str(tmp_path))[0]) == 1  # the good sample only


@pytest.mark.parametrize("limit", [np.int64(100), np.uint32(100), np.float64(100.0)])
def test_a_numpy_size_limit_is_a_number(tmp_path, limit: object) -> None:
    with MDSWriter(columns={"a": "int"}, out=str(tmp_path), size_limit=limit) as w:
        assert w.size_limit == 100


def test_exception_callback_re_raises_a_failed_future(tmp_path) -> None:
    """The reference's public done-callback, for subclasses that hook their futures to it."""
    from concurrent.futures import Future

    writer = MDSWriter(columns={"a": "int"}, out=str(tmp_path))
    ok: Future = Future()
    ok.set_result(None)
    writer.exception_callback(ok)
    assert not writer.event.is_set()
    failed: Future = Future()
    failed.set_exception(OSError("upload refused"))
    with pytest.raises(OSError, match="upload refused"):
        writer.exception_callback(failed)
    assert writer.event.is_set()
    writer.finish()


@pytest.mark.parametrize("given", ["xxh64", "abc"])
def test_hashes_given_as_one_string_say_so(tmp_path, given) -> None:
    """Its letters were checked as names: "Invalid hash: a." or "must be in sorted order"."""
    with pytest.raises(ValueError, match="list of algorithm names"):
        MDSWriter(out=str(tmp_path), columns={"x": "int"}, hashes=given)


def test_a_value_past_uint32_is_refused_saying_why(tmp_path) -> None:
    """One value of more than 4 GiB failed in the length header's `struct.pack` with a bare
    `struct.error`; it gets the writer's own error, as a sample of several large values did.
    (A `bytes` whose length says 4 GiB stands for one, without the memory.)"""
    from streaming import MDSWriter

    class Huge(bytes):
        def __len__(self) -> int:
            return 2**32 + 10

    with MDSWriter(out=str(tmp_path), columns={"id": "int", "blob": "bytes"}) as writer:
        with pytest.raises(ValueError, match=r"^A sample of 4294967322 bytes cannot be stored: "
                                             r"shard offsets are uint32"):
            writer.write({"id": 0, "blob": Huge(b"x")})
        writer.write({"id": 1, "blob": b"fine"})
    assert json.load(open(tmp_path / "index.json"))["shards"][0]["samples"] == 1
