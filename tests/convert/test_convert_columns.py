"""Arrow -> MDS column inference and value conversion (`streaming.convert.columns`)."""

from __future__ import annotations

import decimal

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from streaming.convert.column_values import column_values, table_rows  # noqa: E402
from streaming.convert.columns import (  # noqa: E402
    ConversionError,
    infer_columns,
    infer_encoding,
)
from streaming.format.encodings import get_encoding  # noqa: E402


@pytest.mark.parametrize("arrow_type, encoding", [
    (pa.int8(), "int8"), (pa.uint16(), "uint16"), (pa.int64(), "int64"),
    (pa.float32(), "float32"), (pa.float64(), "float64"), (pa.string(), "str"),
    (pa.large_string(), "str"), (pa.binary(), "bytes"), (pa.decimal128(10, 2), "str_decimal"),
    (pa.list_(pa.int32()), "ndarray:int32"), (pa.large_list(pa.uint8()), "ndarray:uint8"),
    (pa.list_(pa.float32(), 4), "ndarray:float32:4"), (pa.bool_(), "json"),
    (pa.struct([("a", pa.int64()), ("b", pa.list_(pa.string()))]), "json"),
    (pa.list_(pa.list_(pa.int32())), "json"), (pa.null(), "json"),
    (pa.dictionary(pa.int32(), pa.string()), "str"),
])
def test_inferred_encodings(arrow_type: object, encoding: str) -> None:
    assert infer_encoding("col", arrow_type) == encoding


def test_types_without_an_encoding_name_the_column() -> None:
    with pytest.raises(ConversionError, match="'when'.*timestamp"):
        infer_encoding("when", pa.timestamp("us"))
    table = pa.table({"when": pa.array([0, 1], pa.timestamp("s")), "x": [1, 2]})
    columns = infer_columns(table.schema, {"when": "str"})  # an override makes it convertible
    assert columns == {"when": "str", "x": "int64"}
    assert table_rows(table, columns)[1]["when"] == "1970-01-01 00:00:01"
    with pytest.raises(ConversionError, match="'nope'"):
        infer_columns(table.schema, {"nope": "int"})
    with pytest.raises(ConversionError, match="not an MDS encoding"):
        infer_columns(table.schema, {"x": "int128", "when": "str"})


def test_nulls_make_json_or_fail_with_the_row() -> None:
    table = pa.table({"a": [1, None, 3], "b": ["x", "y", "z"]})
    assert infer_columns(table.schema, sample=table) == {"a": "json", "b": "str"}
    assert [r["a"] for r in table_rows(table, {"a": "json"})] == [1, None, 3]
    with pytest.raises(ConversionError, match="'a' row 1 is null"):
        column_values(table.column("a"), "int64", "a")


def test_float_nulls_are_nan_wherever_they_are() -> None:
    """A float column keeps its encoding with nulls (pandas' NaN arrives as a null), early or
    late in the input, instead of turning `json` or failing past the inferred sample."""
    table = pa.table({"f": [1.5, None, 3.0], "i": pa.array([1, None, 3])})
    assert infer_columns(table.schema, sample=table.slice(0, 1)) == {"f": "float64", "i": "int64"}
    assert infer_columns(table.schema, sample=table) == {"f": "float64", "i": "json"}
    coder = get_encoding("float32")
    got = [coder.decode(b) for b in column_values(table.column("f"), "float32", "f")]
    assert got[0] == 1.5 and np.isnan(got[1]) and got[1].dtype == np.float32
    got = [coder.decode(b) for b in column_values(table.column("i"), "float32", "i")]
    assert got[0] == 1.0 and np.isnan(got[1])


def test_an_empty_include_is_refused() -> None:
    with pytest.raises(ConversionError, match="`include` names no column"):
        infer_columns(pa.schema([("a", pa.int64())]), include=[])


def test_maps_are_dicts_and_duplicate_keys_fail() -> None:
    maps = pa.array([{"x": 1, "y": 2}, {}], pa.map_(pa.string(), pa.int64()))
    nested = pa.array([{"m": {"k": 1}}, {"m": {}}],
                      pa.struct([("m", pa.map_(pa.string(), pa.int64()))]))
    table = pa.table({"maps": maps, "nested": nested})
    assert infer_columns(table.schema) == {"maps": "json", "nested": "json"}
    assert table_rows(table, {"maps": "json", "nested": "json"}) == [
        {"maps": {"x": 1, "y": 2}, "nested": {"m": {"k": 1}}}, {"maps": {}, "nested": {"m": {}}}]
    twice = pa.array([[("x", 1), ("x", 2)]], pa.map_(pa.string(), pa.int64()))
    with pytest.raises(KeyError, match="duplicate key"):
        column_values(twice, "json", "m")


@pytest.mark.parametrize("encoding, values", [
    ("int32", [1, -2, 3]), ("uint8", [0, 255, 7]), ("float16", [0.5, 1.5, -2.0]),
    ("int", [1, 2**40, -5]), ("float64", [0.1, 2.5, -1e300]),
])
def test_pre_encoded_scalars_match_the_encoding(encoding: str, values: list) -> None:
    coder = get_encoding(encoding)
    got = column_values(pa.array(values), encoding, "v")
    assert got == [coder.encode(np.dtype(encoding if encoding != "int" else "int64").type(v)
                                if encoding != "int" else v) for v in values]


def test_arrays_fixed_and_ragged() -> None:
    ragged = pa.array([[1, 2, 3], [4], [5, 6]], pa.list_(pa.int64()))
    got = column_values(ragged.slice(1), "ndarray:int16", "t")  # sliced: offsets not at 0
    assert [a.tolist() for a in got] == [[4], [5, 6]] and got[0].dtype == np.int16
    fixed = pa.array([[1, 2], [3, 4]], pa.list_(pa.int32(), 2))
    assert column_values(fixed, "ndarray:int32:2", "t") == [
        get_encoding("ndarray:int32:2").encode(np.array(row, np.int32)) for row in ([1, 2],
                                                                                   [3, 4])]
    with pytest.raises(ConversionError, match="row 1 has 1 values"):
        column_values(ragged, "ndarray:int64:3", "t")
    with pytest.raises(ConversionError, match="row 0 is an empty list"):
        column_values(pa.array([[], [1]], pa.list_(pa.int32())), "ndarray:int32", "t")


def test_casts_for_overrides() -> None:
    assert column_values(pa.array(["1", "22"]), "int32", "s") == [
        np.int32(1).tobytes(), np.int32(22).tobytes()]
    assert column_values(pa.array([1, 2]), "str", "n") == ["1", "2"]
    assert column_values(pa.array(["1.5"]), "str_decimal", "d") == [decimal.Decimal("1.5")]
    with pytest.raises(ConversionError, match="cannot convert"):
        column_values(pa.array(["x"]), "int32", "s")


@pytest.mark.parametrize("array, encoding, says", [
    (pa.array([1, 300]), "uint8", "300 not in range"),
    (pa.array([70000]), "uint16", "70000 not in range"),
    (pa.array([-1]), "uint32", "-1 not in range"),
    (pa.array([2**63 + 5], pa.uint64()), "int", "not in range"),
    (pa.array([1.5]), "int", "truncated"),
    (pa.array([[1, 128]]), "ndarray:int8", "128 not in range"),
    (pa.array([1e300]), "float32", "out of range for float32"),
    (pa.array([1e300]), "float16", "out of range for float16"),
])
def test_a_narrower_override_refuses_values_it_cannot_hold(array: object, encoding: str,
                                                           says: str) -> None:
    """`--column v=uint8` over 300 used to store 44 in silence (numpy's wrap-around), while
    MDSWriter itself refuses np.uint8(300): the value is named instead."""
    with pytest.raises(ConversionError, match=f"Column 'v'.*{says}"):
        column_values(array, encoding, "v")


def test_a_narrower_override_keeps_values_that_fit() -> None:
    assert column_values(pa.array([0, 255]), "uint8", "v") == [b"\x00", b"\xff"]
    assert column_values(pa.array([1.0, -2.0]), "int", "v") == [
        np.int64(1).tobytes(), np.int64(-2).tobytes()]
    assert column_values(pa.array([True]), "uint8", "v") == [b"\x01"]
    assert column_values(pa.array([0.1]), "float32", "v") == [np.float32(0.1).tobytes()]
    assert column_values(pa.array([[1, 127]]), "ndarray:int8", "v")[0].tolist() == [1, 127]


def test_a_binary_column_with_nulls_is_never_json_and_pkl_stores_its_bytes(tmp_path) -> None:
    """A null in a binary column made it `json`, and the writer, which takes a `bytes` value as
    already encoded, stored the raw bytes: exit 0 and shards nobody could read. With
    `pkl`, the same."""
    from streaming import LocalDataset, MDSWriter

    table = pa.table({"img": pa.array([b"\x89PNG", None, b"abc"])})
    assert infer_columns(table.schema, sample=table) == {"img": "bytes"}
    with pytest.raises(ConversionError, match=r"Column 'img' row 1 is null; .* use columns="
                                              r"\{'img': 'pkl'\} \(--column img=pkl"):
        table_rows(table, {"img": "bytes"})
    with pytest.raises(ConversionError, match=r"Column 'img' row 0: json cannot store bytes"):
        table_rows(table, {"img": "json"})
    rows = table_rows(table, {"img": "pkl"})
    with MDSWriter(out=str(tmp_path), columns={"img": "pkl"}) as writer:
        for row in rows:
            writer.write(row)
    read = LocalDataset(str(tmp_path), allow_unsafe_types=True)
    assert [read[i]["img"] for i in range(3)] == [b"\x89PNG", None, b"abc"]


def test_dates_and_times_as_int64_are_their_raw_ticks() -> None:
    """The no-encoding message offers 'int64' (raw ticks) for a date; taking it failed with
    Arrow's "Unsupported cast from date32[day] to int64"."""
    import datetime

    dates = pa.array([datetime.date(1970, 1, 2), datetime.date(2024, 1, 1)])
    with pytest.raises(ConversionError, match="'int64' \\(raw ticks\\)"):
        infer_columns(pa.schema([("d", dates.type)]))
    encoded = column_values(dates, "int64", "d")
    assert [get_encoding("int64").decode(v) for v in encoded] == [1, 19723]
    stamps = pa.array([datetime.datetime(1970, 1, 1, 0, 0, 1)], pa.timestamp("ms"))
    assert get_encoding("int64").decode(column_values(stamps, "int64", "t")[0]) == 1000
