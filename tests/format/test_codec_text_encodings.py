"""Column types of JSONL and CSV/TSV/XSV shards (reference paths `format.json` / `format.xsv`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

import streaming.base.format.json.encodings as json_ref
import streaming.base.format.xsv.encodings as xsv_ref
from streaming.format.jsonl import encodings as jenc
from streaming.format.xsv import encodings as xenc


@pytest.mark.parametrize(
    ("cls", "good", "bad"),
    [(jenc.Str, ["99", ""], [99, b"x", None]), (jenc.Int, [99, True, -(2**70)], ["99", 1.25]),
     (jenc.Float, [1.25, float("inf")], ["99", b"x", 25])],
)
def test_json_is_encoded(cls: Any, good: list, bad: list) -> None:
    for value in good:
        assert cls.is_encoded(value) is True and cls().is_encoded(value) is True
    for value in bad:
        with pytest.raises(AttributeError, match="data should be of type"):
            cls.is_encoded(value)


def test_json_names() -> None:
    for name in ("str", "int", "float"):
        assert jenc.is_json_encoding(name)
    assert not jenc.is_json_encoding("") and not jenc.is_json_encoding("bytes")
    assert jenc.is_json_encoded("float", 9.9) is True
    with pytest.raises(AttributeError):
        jenc.is_json_encoded("int", 9.9)
    with pytest.raises(KeyError):
        jenc.is_json_encoded("bytes", b"")


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [("str", "mosaicml", "mosaicml"), ("int", 27, "27"), ("int", -5, "-5"),
     ("float", 1.25, "1.25"), ("float", 9.0, "9.0")],
)
def test_xsv_encode_decode(name: str, value: Any, text: str) -> None:
    assert xenc.xsv_encode(name, value) == text
    decoded = xenc.xsv_decode(name, text)
    assert type(decoded) is type(value) and decoded == value


@pytest.mark.parametrize(
    ("cls", "bad"),
    [(xenc.Str, [99, b"x", 1.5]), (xenc.Int, ["99", b"x", 123.45]), (xenc.Float, ["9", 12])],
)
def test_xsv_type_checks(cls: Any, bad: list) -> None:
    for value in bad:
        with pytest.raises(AttributeError, match="data should be of type"):
            cls.encode(value)


def test_xsv_names() -> None:
    assert all(xenc.is_xsv_encoding(n) for n in ("str", "int", "float"))
    assert not xenc.is_xsv_encoding("")
    with pytest.raises(KeyError):
        xenc.xsv_encode("bytes", b"")


@settings(max_examples=40, deadline=None)
@given(st.integers(), st.floats(allow_nan=False), st.text())
def test_xsv_round_trips(integer: int, real: float, text: str) -> None:
    assert xenc.xsv_decode("int", xenc.xsv_encode("int", integer)) == integer
    assert xenc.xsv_decode("float", xenc.xsv_encode("float", real)) == real
    assert xenc.xsv_decode("str", xenc.xsv_encode("str", text)) == text


def test_reference_paths_alias_ours() -> None:
    for module, ours in ((json_ref, jenc), (xsv_ref, xenc)):
        for name in [*module.__all__, "Encoding", "Str", "Int", "Float", "_encodings"]:
            assert getattr(module, name) is getattr(ours, name)
    assert set(json_ref.__all__) == {"is_json_encoded", "is_json_encoding"}  # the reference's
    assert set(xsv_ref.__all__) == {"is_xsv_encoding", "xsv_encode", "xsv_decode"}
