"""Every documented MDS encoding error: the reference's exception type and message fragment."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from streaming.errors import ShardFormatError
from streaming.format.encodings import (
    JSON,
    NDArray,
    get_encoding,
    mds_decode,
    mds_encode,
)


def _image() -> Any:
    from PIL import Image

    return Image.new("RGB", (2, 2))


@pytest.mark.parametrize(
    ("encoding", "value", "expected"),
    [
        ("bytes", "9", "bytes"),
        ("bytes", 25, "bytes"),
        ("str", 25, "str"),
        ("int", "27", "int"),
        ("int", 25.9, "int"),
        ("int", np.int64(3), "int"),  # numpy ints are not Python ints
        ("str_int", 1.0, "int"),
        ("str_float", 1, "float"),
        ("str_decimal", 1.5, "decimal.Decimal"),
        ("pil", 25.9, "PIL.Image.Image"),
        ("jpeg", 12.5, "PIL.Image.Image"),
        ("png", 77.7, "PIL.Image.Image"),
        ("list[pil]", (_image(),), "list"),
        ("list[png]", "x", "list"),
        ("ndarray", [1, 2], "numpy.ndarray"),
    ],
)
def test_type_checks_raise_attribute_error(encoding: str, value: Any, expected: str) -> None:
    with pytest.raises(AttributeError, match=f"data should be of type <class '{expected}'>, but"):
        mds_encode(encoding, value)


def test_type_check_message_names_the_actual_type() -> None:
    with pytest.raises(AttributeError, match="found as <class 'float'>"):
        mds_encode("str", 12.5)


def test_list_elements_are_type_checked() -> None:
    with pytest.raises(AttributeError, match="PIL.Image.Image"):
        mds_encode("list[jpeg]", [_image(), 5])


@pytest.mark.parametrize(("encoding", "value"), [("int", 2**63), ("uint8", 300), ("int8", -129)])
def test_out_of_range_integers_overflow(encoding: str, value: int) -> None:
    with pytest.raises(OverflowError):
        mds_encode(encoding, value)


def test_scalars_reject_text_that_is_not_a_number() -> None:
    with pytest.raises(ValueError):
        mds_encode("float32", "abc")


def test_ndarray_unsupported_dtype() -> None:
    with pytest.raises(ValueError, match=r"Unsupported dtype: complex128\."):
        mds_encode("ndarray", np.zeros(2, np.complex128))


def test_ndarray_wrong_dtype() -> None:
    with pytest.raises(ValueError, match=r"Wrong dtype: expected uint8, got int16\."):
        mds_encode("ndarray:uint8", np.zeros(2, np.int16))


def test_ndarray_wrong_shape() -> None:
    with pytest.raises(ValueError, match=r"Wrong shape: expected \(2, 3\), got \(3, 2\)\."):
        mds_encode("ndarray:uint8:2,3", np.zeros((3, 2), np.uint8))


@pytest.mark.parametrize("encoding", ["ndarray", "ndarray:float64"])
def test_ndarray_empty(encoding: str) -> None:
    with pytest.raises(ValueError, match="Attempting to encode a numpy array with 0 elements"):
        mds_encode(encoding, np.array([]))


@pytest.mark.parametrize("array", [np.array(0.5), np.empty(()), np.array(1)])
def test_ndarray_scalar(array: np.ndarray) -> None:
    with pytest.raises(ValueError, match="Attempting to encode a scalar with NDArray encoding"):
        mds_encode("ndarray", array)


def test_ndarray_too_many_axes() -> None:
    with pytest.raises(ValueError, match="maximum 63, got 64"):
        mds_encode("ndarray", np.zeros((1,) * 64, np.uint8))


@pytest.mark.parametrize(
    ("dtype", "shape"), [("foo", None), ("complex64", None), ("uint8", (2, 0)), ("uint8", ())]
)
def test_ndarray_bad_constructor_args(dtype: str, shape: Any) -> None:
    # The reference asserts here; ours is a ValueError that is also an AssertionError.
    with pytest.raises(ValueError) as info:
        NDArray(dtype, shape)
    assert isinstance(info.value, AssertionError)


@pytest.mark.parametrize("encoding", ["ndarray:foo", "ndarray:uint8:", "ndarray:uint8:2,x",
                                      "ndarray:uint8:2:3", "ndarray::3", "ndarray:uint8:0"])
def test_malformed_ndarray_strings(encoding: str) -> None:
    with pytest.raises(ValueError, match=f"Unsupported encoding: {encoding}"):
        get_encoding(encoding)


@pytest.mark.parametrize(
    ("encoding", "data"),
    [("ndarray:uint16:4", b"\x00" * 7), ("ndarray:int32", b"\x04\x02" + b"\x00" * 7),
     ("ndarray", b"\x07\x04\x01"), ("ndarray", b"\x08\x04\x03\x00\x00")],
)
def test_ndarray_truncated_or_corrupt_bytes(encoding: str, data: bytes) -> None:
    with pytest.raises(ShardFormatError):
        mds_decode(encoding, data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x01\x00", "Input data is too short to contain valid jpeg arrays"),
        (b"\x00\x00\x00\x00", "Negative number of images decoded"),
        (b"\x02\x00\x00\x00\x05\x00\x00\x00", "Data is too short w.r.t the number of images"),
    ],
)
def test_jpeg_array_decode_errors(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mds_decode("jpeg_array", data)


@pytest.mark.parametrize("value", [5, [b"ok", 3], ["text"], np.zeros(3)])
def test_jpeg_array_encode_needs_byte_strings(value: Any) -> None:
    with pytest.raises(TypeError):
        mds_encode("jpeg_array", value)


def test_image_list_truncated_payload() -> None:
    data = mds_encode("list[pil]", [_image()])
    with pytest.raises(ShardFormatError):
        mds_decode("list[pil]", data[:-3])


def test_json_is_valid_names_the_original_value() -> None:
    bad = "{'name': 'streaming'}"
    with pytest.raises(json.JSONDecodeError) as info:
        JSON()._is_valid(bad, bad)
    assert info.value.msg == f"Invalid JSON data: {bad}"


def test_json_rejects_unserialisable_values() -> None:
    with pytest.raises(TypeError):
        mds_encode("json", {"when": Decimal("1.5")})


@pytest.mark.parametrize(
    ("encoding", "data"),
    [("ndarray", b""), ("ndarray", b"\x08\x0b\x01"), ("int", b"\x01\x02"), ("pil", b"\x01"),
     ("list[png]", b"\x00\x00")],
)
def test_short_headers_are_shard_format_errors(encoding: str, data: bytes) -> None:
    with pytest.raises(ShardFormatError):
        mds_decode(encoding, data)


@pytest.mark.parametrize(("encoding", "raw", "kind"), [
    ("str_decimal", b"not a number", "InvalidOperation"),
    ("json", b"[" * 100000 + b"]" * 100000, "RecursionError"),
    ("jpeg", b"this is no image", "UnidentifiedImageError"),
    ("png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "UnidentifiedImageError"),
])
def test_a_decoder_error_of_its_own_type_keeps_it_and_says_where(tmp_path, encoding, raw,
                                                                   kind) -> None:
    """Errors a decoder raises that are not ValueErrors (decimal's InvalidOperation, JSON
    nested too deep, Pillow's UnidentifiedImageError) named no shard. They keep the type the
    reference raises (code catches it to skip bad samples) and carry a note saying where."""
    from streaming import LocalDataset, MDSWriter, StreamingDataset

    with MDSWriter(out=str(tmp_path), columns={"v": encoding, "i": "int"}) as writer:
        writer.write({"v": raw, "i": 0})  # bytes are taken as already encoded
    for read in (lambda: LocalDataset(str(tmp_path))[0],
                 lambda: list(StreamingDataset(local=str(tmp_path), batch_size=1))):
        with pytest.raises(Exception) as info:  # noqa: B017 - the type is checked by name
            read()
        assert type(info.value).__name__ == kind or kind in [
            c.__name__ for c in type(info.value).__mro__]
        notes = " ".join(getattr(info.value, "__notes__", []))
        assert "shard.00000.mds" in notes, notes
