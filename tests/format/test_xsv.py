"""CSV/TSV/XSV shards: the spec's CSV example, separators, round trips, malformed lines."""

from __future__ import annotations

import json
import struct

import pytest
from formats_support import materialise, read_all, scratch_dir
from hypothesis import given, settings, strategies as st

from streaming.errors import ShardFormatError
from streaming.format import (
    CSVReader,
    CSVWriter,
    TSVReader,
    TSVWriter,
    XSVReader,
    XSVWriter,
    load_readers,
)


def test_csv_example(tmp_path) -> None:
    with CSVWriter(columns={"s": "str", "n": "int", "f": "float"}, out=str(tmp_path)) as writer:
        writer.write({"f": 1.5, "n": 1, "s": "a"})
        writer.write({"f": 2.0, "n": 2, "s": "b"})
    assert (tmp_path / "shard.00000.csv").read_bytes() == b"f,n,s\n1.5,1,a\n2.0,2,b\n"
    meta = (tmp_path / "shard.00000.csv.meta").read_bytes()
    assert struct.unpack_from("<4I", meta) == (2, 6, 14, 22)
    config = json.loads(meta[16:])
    assert config == {"column_encodings": ["float", "int", "str"], "column_names": ["f", "n", "s"],
                      "compression": None, "format": "csv", "hashes": [], "newline": "\n",
                      "size_limit": 1 << 26, "version": 2}
    reader = load_readers(str(tmp_path))[0]
    assert isinstance(reader, CSVReader) and reader.separator == ","
    assert reader[0] == {"f": 1.5, "n": 1, "s": "a"} and list(reader)[1]["f"] == 2.0


@pytest.mark.parametrize(
    ("cls", "kwargs", "fmt", "reader_cls", "sep"),
    [(CSVWriter, {}, "csv", CSVReader, ","), (TSVWriter, {}, "tsv", TSVReader, "\t"),
     (XSVWriter, {"separator": "::"}, "xsv", XSVReader, "::")],
)
def test_formats(tmp_path, cls: type, kwargs: dict, fmt: str, reader_cls: type, sep: str) -> None:
    with cls(columns={"b": "str", "a": "int"}, out=str(tmp_path), **kwargs) as writer:
        writer.write({"a": 7, "b": "x y"})
    assert writer.format == fmt
    assert ("separator" in writer.get_config()) == (fmt == "xsv")
    assert (tmp_path / f"shard.00000.{fmt}").read_bytes() == f"a{sep}b\n7{sep}x y\n".encode()
    reader = load_readers(str(tmp_path))[0]
    assert type(reader) is reader_cls and reader[0] == {"a": 7, "b": "x y"}
    assert not isinstance(writer, CSVWriter) or fmt == "csv"


def test_separator_and_newline_checks(tmp_path) -> None:
    with pytest.raises(ValueError, match="contains the separator"):
        CSVWriter(columns={"a,b": "str"}, out=str(tmp_path / "x"))
    with pytest.raises(TypeError, match="CSVWriter passed column `a` with encoding `bytes`"):
        CSVWriter(columns={"a": "bytes"}, out=str(tmp_path / "x"))
    for empty in ({"separator": ""}, {"separator": ",", "newline": ""}):  # the reference's
        with pytest.raises(AssertionError, match="must be non-empty"):  # assert, and ours
            XSVWriter(columns={"a": "str"}, out=str(tmp_path / "x"), **empty)
    assert not (tmp_path / "x").exists()
    writer = TSVWriter(columns={"a": "str"}, out=str(tmp_path / "y"))
    for bad in ("tab\there", "new\nline"):
        with pytest.raises(ValueError, match="contains the separator"):
            writer.write({"a": bad})
    with pytest.raises(AttributeError, match="data should be of type"):
        writer.write({"a": 3})
    writer.write({"a": "fine, with comma"})
    writer.finish()
    assert load_readers(str(tmp_path / "y"))[0][0] == {"a": "fine, with comma"}


def test_header_does_not_count_against_the_limit(tmp_path) -> None:
    with CSVWriter(columns={"long_column_name": "int"}, out=str(tmp_path), size_limit=10) as w:
        for i in range(10):
            w.write({"long_column_name": i})  # '<digit>\n' = 2 bytes
    assert [s["samples"] for s in w.shards] == [5, 5]


text = st.text(st.characters(blacklist_characters="\n\r|,", blacklist_categories=("Cs",)),
               max_size=12)


@pytest.mark.filterwarnings("ignore:A sample of")
@settings(max_examples=30, deadline=None)
@given(st.lists(st.fixed_dictionaries({"i": st.integers(-2**40, 2**40), "s": text,
                                       "f": st.floats(allow_nan=False)}), max_size=30),
       st.sampled_from([None, "gz:1", "br:1"]), st.sampled_from(["|", ","]),
       st.sampled_from(["\n", "\r\n"]), st.sampled_from([None, 40]))
def test_round_trip(samples: list[dict], compression: str | None, separator: str, newline: str,
                    limit: int | None) -> None:
    with scratch_dir() as out:
        with XSVWriter(columns={"i": "int", "s": "str", "f": "float"}, separator=separator,
                       newline=newline, out=out, compression=compression, size_limit=limit,
                       exist_ok=True) as writer:
            for sample in samples:
                writer.write(sample)
        materialise(out)
        by_index, in_order = read_all(out)
        assert by_index == in_order == samples


def test_wrong_field_count_is_a_format_error(tmp_path) -> None:
    with CSVWriter(columns={"a": "int", "b": "int"}, out=str(tmp_path)) as writer:
        writer.write({"a": 1, "b": 2})
    reader = load_readers(str(tmp_path))[0]
    with pytest.raises(ValueError, match="has 3 fields, expected 2"):
        reader.decode_sample(b"1,2,3\n")
    path = tmp_path / "shard.00000.csv"
    path.write_bytes(path.read_bytes().replace(b"1,2", b"1;2"))  # same size, one field short
    reader = load_readers(str(tmp_path))[0]
    for read in (lambda: reader.get_item(0), lambda: list(reader)):
        with pytest.raises(ShardFormatError, match=r"Sample 0 of shard file .*shard.00000.csv "
                                                   r"cannot be decoded: ValueError: the line has "
                                                   r"1 fields, expected 2"):
            read()


@pytest.mark.parametrize(("separator", "newline", "values"), [
    ("::", "\n", {"a": "x:", "b": "y"}),  # "x:::y" would split as "x", ":y"
    ("::", "\n", {"a": "x:", "b": ":y"}),  # "x:::::y" would split in three
    (",", "||", {"a": "x", "b": "y|"}),  # "y|||" would end the line one character early
])
def test_long_separators_and_newlines_refuse_lines_that_read_back_wrong(
        tmp_path, separator: str, newline: str, values: dict) -> None:
    writer = XSVWriter(columns={"a": "str", "b": "str"}, separator=separator, newline=newline,
                       out=str(tmp_path))
    with pytest.raises(ValueError, match="would read back as other values"):
        writer.write(values)
    writer.write({"a": "x", "b": "y"})
    writer.finish()
    assert read_all(str(tmp_path)) == ([{"a": "x", "b": "y"}],) * 2


def test_column_names_that_would_read_back_wrong_are_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="would read back as other values"):
        XSVWriter(columns={"a:": "str", "b": "str"}, separator="::", out=str(tmp_path / "x"))


def test_a_bool_in_an_int_column_reads_back_as_its_number(tmp_path) -> None:
    """`str(True)` is a field `int()` cannot read (the reference writes it, then fails)."""
    with CSVWriter(columns={"label": "int"}, out=str(tmp_path)) as writer:
        for value in (True, False, 7):
            writer.write({"label": value})
    assert read_all(str(tmp_path)) == ([{"label": 1}, {"label": 0}, {"label": 7}],) * 2
