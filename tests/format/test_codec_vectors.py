"""Byte identity with the reference (mosaicml-streaming 0.13.0) for encodings, compression, hashes.

`data/codec_vectors.json` was written by `data/make_codec_vectors.py` under the reference; the
inputs come from `codec_cases.py`, shared by both sides.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
from typing import Any

import codec_cases as cases
import numpy as np
import pytest

from streaming import hashing
from streaming.format import compression
from streaming.format.encodings import mds_decode, mds_encode

with open(os.path.join(os.path.dirname(__file__), "data", "codec_vectors.json")) as _f:
    VECTORS = json.load(_f)


def _matches(record: dict, data: bytes) -> bool:
    if len(data) != record["size"]:
        return False
    if "hex" in record:
        return data.hex() == record["hex"]
    return hashlib.sha256(data).hexdigest() == record["sha256"]


def _stored_bytes(record: dict) -> bytes:
    return bytes.fromhex(record["hex"])


def _qualname(obj: object) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _pixels(value: Any) -> Any:
    if isinstance(value, list):
        return [_pixels(item) for item in value]
    return np.asarray(value)


def _assert_same_value(ours: Any, expected: Any) -> None:
    if isinstance(expected, list):
        assert isinstance(ours, list) and len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _assert_same_value(a, b)
    elif isinstance(expected, np.ndarray):
        assert ours.dtype == expected.dtype and ours.shape == expected.shape
        np.testing.assert_array_equal(ours, expected)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(ours)
    else:
        assert ours == expected


def test_vectors_cover_every_case_and_encoding() -> None:
    assert set(VECTORS["mds"]) == set(cases.MDS_CASES)
    names = {record["encoding"].partition(":")[0] for record in VECTORS["mds"].values()}
    assert len(names) == 28


def _pixel_compared(case: str) -> bool:
    return case in cases.PIXEL_COMPARED or cases.MDS_CASES[case][0] in cases.PIXEL_COMPARED


# Pillow's JPEG/PNG codec bytes vary by version: those cases are compared by decoded pixels in
# test_reference_bytes_decode_like_reference instead.
@pytest.mark.parametrize("case", sorted(c for c in cases.MDS_CASES if not _pixel_compared(c)))
def test_mds_encode_matches_reference(case: str) -> None:
    encoding, make = cases.MDS_CASES[case]
    record = VECTORS["mds"][case]
    if encoding in cases.PICKLE_DEPENDENT and (
        VECTORS["generated_with"]["pickle_protocol"] != pickle.DEFAULT_PROTOCOL
    ):
        pytest.skip("pickle bytes depend on the interpreter's default protocol")
    assert _matches(record, mds_encode(encoding, make()))


@pytest.mark.parametrize(
    "case", sorted(c for c, r in VECTORS["mds"].items() if "hex" in r and "decoded_type" in r)
)
def test_reference_bytes_decode_like_reference(case: str) -> None:
    encoding, make = cases.MDS_CASES[case]
    record = VECTORS["mds"][case]
    decoded = mds_decode(encoding, _stored_bytes(record))
    assert _qualname(decoded) == record["decoded_type"]
    if isinstance(decoded, np.ndarray):
        assert decoded.dtype.str == record["decoded_dtype"]
        assert list(decoded.shape) == record["decoded_shape"]
        assert not decoded.flags.writeable  # a view over the shard bytes, like the reference
    if isinstance(decoded, list) and decoded:
        assert _qualname(decoded[0]) == record["element_type"]
    expected = make()
    if _pixel_compared(case):
        ours = mds_decode(encoding, mds_encode(encoding, expected))
        _assert_same_value(_pixels(decoded), _pixels(ours))
    elif encoding in ("pil", "list[pil]"):
        _assert_same_value(_pixels(decoded), _pixels(expected))
    elif isinstance(expected, np.ndarray):
        _assert_same_value(decoded, expected.tolist() if encoding == "json" else expected)
    else:  # the constructor of the decoded type replays the encoder's cast (3.7 -> uint8 3)
        _assert_same_value(decoded, type(decoded)(expected))


@pytest.mark.parametrize(
    "case", sorted(c for c, r in VECTORS["mds"].items() if "decode_error" in r)
)
def test_reference_decode_failures_fail_here_too(case: str) -> None:
    # jpeg_array cases holding stand-in bytes: Pillow cannot identify them on either side.
    record = VECTORS["mds"][case]
    with pytest.raises(Exception) as info:
        mds_decode(record["encoding"], _stored_bytes(record))
    assert type(info.value).__name__ == record["decode_error"]


def test_big_vector_decodes_to_the_input() -> None:
    encoding, make = cases.MDS_CASES["ndarray_float16_u32shape"]
    value = make()
    decoded = mds_decode(encoding, mds_encode(encoding, value))
    assert decoded.shape == (1, 70000)
    np.testing.assert_array_equal(decoded, value)


@pytest.mark.parametrize("key", sorted(VECTORS["compression"]))
def test_compress_matches_reference(key: str) -> None:
    spec, name = key.split("|")
    data = cases.compression_inputs()[name]
    expected = bytes.fromhex(VECTORS["compression"][key])
    if spec.startswith("gz"):
        coder = compression.get_compression(spec)
        ours = compression.Gzip(coder.level, mtime=cases.GZIP_MTIME).compress(data)
    else:
        ours = compression.compress(spec, data)
    assert ours == expected
    assert compression.decompress(spec, expected) == data


def test_hashes_match_reference() -> None:
    inputs = cases.hash_inputs()
    for key, digest in VECTORS["hashes"].items():
        algo, name = key.split("|")
        assert hashing.get_hash(algo, inputs[name]) == digest, key
    assert {key.split("|")[0] for key in VECTORS["hashes"]} == hashing.get_hashes()
