"""Every MDS encoding round-trips (hypothesis), and the batched fixed-size path equals `decode`."""

from __future__ import annotations

import math
import tempfile
from decimal import Decimal
from io import BytesIO
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from streaming import MDSWriter
from streaming.format.encodings import get_encoding, mds_decode, mds_encode

VALUE_DTYPES = (
    "uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32",
    "uint64", "int64", "float64",
)
FAST = settings(max_examples=40, deadline=None)


def _same_bits(a: Any, b: Any) -> bool:
    """Equality that treats NaN payloads as values: compare the raw little-endian bytes."""
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


@FAST
@given(st.integers(-(2**63), 2**63 - 1))
def test_int_round_trips_to_python_int(value: int) -> None:
    decoded = mds_decode("int", mds_encode("int", value))
    assert type(decoded) is int and decoded == value


@FAST
@given(st.sampled_from(VALUE_DTYPES).flatmap(lambda name: hnp.from_dtype(np.dtype(name))))
def test_scalar_round_trips_bit_exact(value: np.generic) -> None:
    name = value.dtype.name
    data = mds_encode(name, value)
    assert len(data) == value.dtype.itemsize
    decoded = mds_decode(name, data)
    assert type(decoded) is type(value) and _same_bits(decoded, value)


@FAST
@given(st.text(), st.binary())
def test_str_and_bytes_round_trip(text: str, blob: bytes) -> None:
    assert mds_decode("str", mds_encode("str", text)) == text
    assert mds_decode("str", memoryview(text.encode())) == text
    assert mds_decode("bytes", mds_encode("bytes", blob)) == blob
    assert type(mds_decode("bytes", memoryview(blob))) is bytes


@FAST
@given(st.integers(), st.floats(), st.decimals())
def test_str_numbers_round_trip(integer: int, real: float, decimal: Decimal) -> None:
    decoded_int = mds_decode("str_int", mds_encode("str_int", integer))
    assert type(decoded_int) is int and decoded_int == integer
    decoded_float = mds_decode("str_float", mds_encode("str_float", real))
    assert type(decoded_float) is float
    assert decoded_float == real or (math.isnan(real) and math.isnan(decoded_float))
    decoded_decimal = mds_decode("str_decimal", mds_encode("str_decimal", decimal))
    assert type(decoded_decimal) is Decimal and str(decoded_decimal) == str(decimal)


ARRAYS = st.sampled_from(VALUE_DTYPES).flatmap(
    lambda name: hnp.arrays(
        np.dtype(name), hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6)
    )
)


@FAST
@given(ARRAYS)
def test_ndarray_variants_round_trip(array: np.ndarray) -> None:
    name = array.dtype.name
    shape = ",".join(map(str, array.shape))
    sizes = []
    for encoding in ("ndarray", f"ndarray:{name}", f"ndarray:{name}:{shape}"):
        data = mds_encode(encoding, array)
        decoded = mds_decode(encoding, data)
        assert decoded.dtype == array.dtype and decoded.shape == array.shape
        assert _same_bits(decoded, array)
        assert not decoded.flags.writeable
        sizes.append(len(data))
    assert sizes[2] < sizes[1] < sizes[0]
    assert sizes[2] == array.size * array.dtype.itemsize == get_encoding(encoding).size


@pytest.mark.parametrize(
    ("shape", "shape_code"), [((255,), 0), ((256,), 1), ((1, 65535), 1), ((65536, 1), 2)]
)
def test_ndarray_shape_ints_use_the_smallest_type(shape: tuple[int, ...], shape_code: int) -> None:
    array = np.zeros(shape, np.uint8)
    data = mds_encode("ndarray:uint8", array)
    assert data[0] == (len(shape) << 2) | shape_code
    assert mds_decode("ndarray:uint8", data).shape == shape


def test_ndarray_decodes_any_shape_int_width() -> None:
    # A writer may spend uint64 on small dims (code 3); the reader must still parse it.
    values = np.arange(6, dtype="<i2")
    header = bytes([17, (2 << 2) | 3])  # int16 values, ndim 2, uint64 dims
    data = header + np.array([2, 3], "<u8").tobytes() + values.tobytes()
    np.testing.assert_array_equal(mds_decode("ndarray", data), values.reshape(2, 3))


@pytest.mark.parametrize("encoding", ["ndarray:int32", "ndarray:int32:4", "ndarray"])
def test_ndarray_decode_owns_its_values_unless_given_bytes(encoding: str) -> None:
    """A view's owner (a shard's mapping) may go or change; `bytes` are owned already."""
    data = mds_encode(encoding, np.arange(4, dtype=np.int32))
    buffer = bytearray(data)
    decoded = mds_decode(encoding, memoryview(buffer))
    assert not np.shares_memory(decoded, np.frombuffer(buffer, np.uint8))
    buffer[-4:] = b"\xff" * 4
    assert decoded.tolist() == [0, 1, 2, 3]
    from_bytes = mds_decode(encoding, data)
    assert np.shares_memory(from_bytes, np.frombuffer(data, np.uint8))
    assert from_bytes.tolist() == [0, 1, 2, 3]


def test_ndarray_big_endian_input_is_stored_little_endian() -> None:
    array = np.arange(5, dtype=">u2")
    for encoding in ("ndarray", "ndarray:uint16", "ndarray:uint16:5"):
        data = mds_encode(encoding, array)
        assert data.endswith(np.arange(5, dtype="<u2").tobytes())
        np.testing.assert_array_equal(mds_decode(encoding, data), array)


def _image(mode: str, width: int, height: int, seed: int) -> Any:
    from PIL import Image

    channels = {"L": 1, "RGB": 3, "RGBA": 4}[mode]
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, channels), np.uint8)
    return Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels)


IMAGES = st.builds(
    _image,
    st.sampled_from(["L", "RGB", "RGBA"]),
    st.integers(1, 9),
    st.integers(1, 9),
    st.integers(0, 2**32 - 1),
)


@settings(max_examples=25, deadline=None)
@given(IMAGES)
def test_lossless_images_round_trip(image: Any) -> None:
    for encoding in ("pil", "png"):
        decoded = mds_decode(encoding, mds_encode(encoding, image))
        assert decoded.mode == image.mode and decoded.size == image.size
        np.testing.assert_array_equal(np.asarray(decoded), np.asarray(image))


@pytest.mark.parametrize("mode", ["1", "L", "RGB", "RGBA", "I;16", "F"])
def test_pil_every_mode_round_trips_and_a_header_past_its_pixels_is_refused(mode: str) -> None:
    """A 201-byte value whose header said 40000 x 40000 made Pillow allocate 1.6 GB before it
    found the data short; the pixel count is checked against the bytes first."""
    import struct

    from PIL import Image

    from streaming.errors import ShardFormatError

    image = Image.new(mode, (13, 5))
    assert mds_decode("pil", mds_encode("pil", image)).tobytes() == image.tobytes()
    name = mode.encode()
    bomb = struct.pack("<III", 40000, 40000, len(name)) + name + b"\0" * 200
    with pytest.raises(ShardFormatError, match=rf"pil value holds 200 bytes of pixels; its "
                                               rf"header's 40000 x 40000 {mode} image needs"):
        mds_decode("pil", bomb)


def test_png_stores_32_bit_grey_as_16_bit() -> None:
    """Pillow 13 refuses to write mode 'I' as PNG; we store it as 16-bit grey, and refuse
    values 16 bits cannot hold rather than clip them."""
    from PIL import Image

    pixels = np.arange(0, 65536, 4099, dtype=np.int32).reshape(4, 4)
    decoded = mds_decode("png", mds_encode("png", Image.fromarray(pixels, mode="I")))
    np.testing.assert_array_equal(np.asarray(decoded.convert("I")), pixels)
    with pytest.raises(ValueError, match="outside 0..65535"):
        mds_encode("png", Image.fromarray(pixels * 2, mode="I"))
    # Also the OSError of Pillow's own refusal, which the reference let through; a writer
    # names the column.
    with tempfile.TemporaryDirectory() as out, pytest.raises(
            OSError, match=r"Column 'im' \(png\): PNG holds 16-bit grey"):
        with MDSWriter(out=out, columns={"im": "png"}) as writer:
            writer.write({"im": Image.fromarray(pixels * 2, mode="I")})


@settings(max_examples=15, deadline=None)
@given(st.lists(IMAGES.filter(lambda im: im.mode != "RGBA"), max_size=3))
def test_image_lists_round_trip(images: list) -> None:
    for encoding in ("list[pil]", "list[png]", "list[jpeg]"):
        decoded = mds_decode(encoding, mds_encode(encoding, images))
        assert [im.size for im in decoded] == [im.size for im in images]
        if encoding != "list[jpeg]":
            for ours, original in zip(decoded, images):
                np.testing.assert_array_equal(np.asarray(ours), np.asarray(original))


def test_jpeg_keeps_the_bytes_of_an_opened_jpeg_file(tmp_path: Any) -> None:
    from PIL import Image

    path = tmp_path / "x.jpg"
    _image("RGB", 16, 16, 0).save(path, format="JPEG", quality=50)
    with Image.open(path) as opened:
        assert mds_encode("jpeg", opened) == path.read_bytes()
        decoded = mds_decode("jpeg", mds_encode("jpeg", opened))
        np.testing.assert_array_equal(np.asarray(decoded), np.asarray(opened))


def test_jpeg_array_decodes_each_jpeg() -> None:
    images = [_image("RGB", 8, 8, 1), _image("L", 4, 6, 2)]
    blobs = []
    for image in images:
        out = BytesIO()
        image.save(out, format="JPEG")
        blobs.append(out.getvalue())
    for encoding in ("jpeg_array", "jpegarray"):
        decoded = mds_decode(encoding, mds_encode(encoding, blobs))
        assert [(im.mode, im.size) for im in decoded] == [("RGB", (8, 8)), ("L", (4, 6))]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@FAST
@given(JSON_VALUES)
def test_json_and_pickle_round_trip(value: Any) -> None:
    assert mds_decode("json", mds_encode("json", value)) == value
    assert mds_decode("pkl", mds_encode("pkl", value)) == value


def test_json_stores_arrays_as_lists() -> None:
    assert mds_decode("json", mds_encode("json", np.arange(3))) == [0, 1, 2]


# ---- decode_many: one strided view over a whole column equals per-sample decode ----------

FIXED_CASES = [
    ("int", lambda i: i * 10**12 - 7),
    *[(name, lambda i, n=name: np.dtype(n).type(i % 100)) for name in VALUE_DTYPES],
    ("ndarray:float32:2,3", lambda i: np.full((2, 3), i / 4, np.float32)),
    ("ndarray:uint16:1024", lambda i: np.arange(1024, dtype=np.uint16) + i),
    ("ndarray:int8:3", lambda i: np.array([i, -i, 1], np.int8)),
]


def _shard_column(encoding: str, values: list) -> np.ndarray:
    """A read-only (n, size) uint8 view of one column inside variable-stride sample records."""
    payloads = [mds_encode(encoding, value) for value in values]
    size = len(payloads[0])
    record = 3 + size + 5  # 3 bytes before the column, 5 after: rows are strided, unaligned
    buffer = b"".join(b"abc" + p + b"defgh" for p in payloads)
    table = np.frombuffer(buffer, np.uint8).reshape(len(values), record)
    return table[:, 3 : 3 + size]


@pytest.mark.parametrize(("encoding", "make"), FIXED_CASES, ids=[c[0] for c in FIXED_CASES])
def test_decode_many_equals_decode(encoding: str, make: Any) -> None:
    coder = get_encoding(encoding)
    assert coder.fixed_dtype is not None and coder.fixed_dtype.byteorder in "<|="
    rows = _shard_column(encoding, [make(i) for i in range(7)])
    many = coder.decode_many(rows)
    items = list(many)
    assert len(items) == 7
    for i, row in enumerate(rows):
        single = coder.decode(row.tobytes())
        assert type(items[i]) is type(single)
        assert _same_bits(items[i], single)
    if encoding == "int":
        assert isinstance(many, list)
    elif encoding.startswith("ndarray"):
        # Each array its own: a kept sample must not pin (or see changes of) the shard.
        assert all(v.shape == coder.fixed_shape for v in items)
        assert not any(np.shares_memory(v, rows) for v in items)
    else:
        assert many.dtype == coder.fixed_dtype and many.shape == (7,)


def test_variable_encodings_have_no_fixed_layout() -> None:
    for encoding in ("bytes", "str", "ndarray", "ndarray:uint8", "json", "pil", "list[png]"):
        coder = get_encoding(encoding)
        assert coder.size is None and coder.fixed_dtype is None and coder.fixed_shape is None
