"""The datasets the reference fixtures cover: writer, arguments and seeded sample values per case.

Only `make_reference_fixtures.py` imports this (under the reference interpreter); our tests read
the inputs back from each case's `expected.json`, so a change here only matters once the fixtures
are regenerated. Keep every case small: the committed data must stay well under 2 MB.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np

SCALAR_DTYPES = (
    "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "float32", "float64",
)
COMPRESSIONS = ("br", "br:1", "bz2", "bz2:1", "gz", "gz:1", "snappy", "zstd", "zstd:7", "zstd:22")
ALL_HASHES = (
    "blake2b", "blake2s", "md5", "sha1", "sha224", "sha256", "sha384", "sha3_224", "sha3_256",
    "sha3_384", "sha3_512", "sha512", "xxh128", "xxh32", "xxh3_128", "xxh3_64", "xxh64",
)
# What byte-identical writer output needs beyond our own code (checked by the write test).
NEEDS_PILLOW = "pillow"
NEEDS_PICKLE = "pickle_protocol"
NEEDS_NUMPY = "numpy_major"  # pickled arrays name numpy._core (2.x) or numpy.core (1.x)

_WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa")


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([ord(c) for c in name])


def _image(rng: np.random.Generator, mode: str, size: tuple[int, int] = (4, 3)) -> Any:
    from PIL import Image

    channels = {"L": 1, "RGB": 3, "RGBA": 4, "I;16": 2, "I": 4, "F": 4}[mode]
    raw = rng.integers(0, 256, size[0] * size[1] * channels, dtype=np.uint8).tobytes()
    if mode == "F":  # random bytes can spell NaN; use real floats instead
        raw = rng.normal(size=size[0] * size[1]).astype("<f4").tobytes()
    return Image.frombytes(mode, size, raw)


def _jpeg_bytes(img: Any) -> bytes:
    out = io.BytesIO()
    img.save(out, format="JPEG")
    return out.getvalue()


def _text(rng: np.random.Generator, n_words: int) -> str:
    return " ".join(_WORDS[i] for i in rng.integers(0, len(_WORDS), n_words))


def _scalars_samples() -> list[dict[str, Any]]:
    rng = _rng("scalars")
    samples = []
    edge = [
        {"uint8": 255, "uint16": 65535, "uint32": 2**32 - 1, "uint64": 2**64 - 1, "int8": -128,
         "int16": -32768, "int32": -(2**31), "int64": -(2**63), "float16": 65504.0,
         "float32": 3.4028234663852886e38, "float64": -1.7976931348623157e308},
        {"uint8": 0, "uint16": 0, "uint32": 0, "uint64": 0, "int8": 127, "int16": 32767,
         "int32": 2**31 - 1, "int64": 2**63 - 1, "float16": -0.0, "float32": 1e-45,
         "float64": float("inf")},
        # numpy inputs and a float given to an int column (the writer casts it)
        {"uint8": np.uint8(7), "uint16": np.int64(300), "uint32": 3.7, "uint64": np.uint64(5),
         "int8": np.int8(-5), "int16": "12", "int32": True, "int64": np.int32(-9),
         "float16": np.float32(0.1), "float32": 2, "float64": np.float64(0.1)},
    ]
    strings = ["", "hello", "héllo wörld ✓ 🚀", "tab\there\nnewline", "\x00nul", "a" * 300]
    blobs = [b"", b"\x00\x01\x02", bytes(range(256)), b"x" * 3, rng.bytes(17), b"\xff"]
    json_values = [
        {"a": 1, "b": [1, 2.5, None, True], "c": {"nested": "ü"}},
        [1, 2, 3],
        "just a string",
        None,
        np.arange(6, dtype=np.int32).reshape(2, 3),
        3.25,
    ]
    for i in range(6):
        nums = edge[i] if i < len(edge) else {
            d: (rng.integers(0, 100) if d.startswith("u") else rng.integers(-50, 50)).item()
            if "int" in d else float(rng.normal()) for d in SCALAR_DTYPES}
        sample = {f"c_{d}": nums[d] for d in SCALAR_DTYPES}
        sample.update({
            "c_bytes": blobs[i],
            "c_str": strings[i],
            "c_int": [0, -1, 2**63 - 1, -(2**63), 42, True][i],
            "c_str_int": [0, -7, 10**30, 5, -(10**20), 123456789][i],
            "c_str_float": [0.0, -1.5, 42.0, 1e-300, 3.141592653589793, float("inf")][i],
            "c_str_decimal": [Decimal("4E15"), Decimal("-0.001"), Decimal("3.14159265358979323846"),
                              Decimal("0"), Decimal("1E-30"), Decimal("123.4500")][i],
            "c_json": json_values[i],
            "not_a_column": "ignored by the writer",
        })
        samples.append(sample)
    return samples


def _scalars_columns() -> dict[str, str]:
    cols = {f"c_{d}": d for d in SCALAR_DTYPES}
    cols.update({"c_bytes": "bytes", "c_str": "str", "c_int": "int", "c_str_int": "str_int",
                 "c_str_float": "str_float", "c_str_decimal": "str_decimal", "c_json": "json"})
    return cols


def _ndarray_samples() -> list[dict[str, Any]]:
    rng = _rng("ndarrays")
    samples = []
    for i, dtype in enumerate(SCALAR_DTYPES):
        shape = [(3,), (2, 2), (1, 2, 3), (300,), (2, 1, 1, 2)][i % 5]
        dyn = (rng.normal(size=shape) * 100).astype(dtype) if dtype.startswith("f") else \
            rng.integers(0, 120, size=shape).astype(dtype)
        var_shape = [(5,), (2, 3), (1, 1, 4), (256, 2), (7, 1)][i % 5]
        var = rng.integers(-1000, 1000, size=var_shape).astype(np.int16)
        if i == 3:
            var = var.T  # non-contiguous input: written in C order
        samples.append({
            "dyn": dyn,
            "int16_var": var,
            "f32_fixed": rng.normal(size=(2, 3)).astype(np.float32),
            "u64_fixed": rng.integers(0, 2**63, size=4, dtype=np.uint64),
            "u8_var": rng.integers(0, 256, size=(1, 70000) if i == 0 else (4,), dtype=np.uint8),
        })
    return samples


def _image_samples() -> list[dict[str, Any]]:
    rng = _rng("images")
    samples = []
    for i in range(4):
        pil_mode = ("RGB", "L", "RGBA", "I;16")[i]
        png_mode = ("RGB", "RGBA", "L", "I;16")[i]
        jpeg_mode = ("RGB", "L", "RGB", "L")[i]
        jpegs = [_jpeg_bytes(_image(rng, "RGB")) for _ in range(1 + i % 3)]
        samples.append({
            "pil": _image(rng, pil_mode),
            "png": _image(rng, png_mode),
            "jpeg": _image(rng, jpeg_mode, (8, 8)),
            "jpeg_array": jpegs,
            "jpegarray": list(reversed(jpegs)),
            "list_pil": [_image(rng, m) for m in ("RGB", "L", "F")[: 1 + i % 3]],
            "list_jpeg": [_image(rng, "RGB") for _ in range(1 + (i + 1) % 2)],
            "list_png": [_image(rng, m) for m in ("L", "RGBA")[: 1 + i % 2]],
            "label": i,
        })
    return samples


def _image_columns() -> dict[str, str]:
    return {"pil": "pil", "png": "png", "jpeg": "jpeg", "jpeg_array": "jpeg_array",
            "jpegarray": "jpegarray", "list_pil": "list[pil]", "list_jpeg": "list[jpeg]",
            "list_png": "list[png]", "label": "int"}


def _pickle_samples() -> list[dict[str, Any]]:
    values = [
        {"a": 1, "b": (2, 3), "c": [4.5, None], "d": {3, 1, 2}},  # int set: no hash-seed order
        (1, "two", b"three", Decimal("4.0")),
        np.arange(5, dtype=np.int64),
        {"nested": {"deep": [1, [2, [3]]]}, 7: "int key"},
    ]
    return [{"obj": v, "idx": i} for i, v in enumerate(values)]


def _preencoded_samples() -> list[dict[str, Any]]:
    # The reference passes `bytes` through unchanged for any encoding (users pre-encode).
    return [
        {"s": b"pre-encoded", "n": np.int64(-3).tobytes(), "a": b"\x01\x02\x03\x04", "p": 5},
        {"s": "plain", "n": 9, "a": np.arange(4, dtype=np.uint8), "p": b"77"},
    ]


def _token_samples(name: str, n: int, with_text: bool = True) -> list[dict[str, Any]]:
    rng = _rng(name)
    samples = []
    for i in range(n):
        sample: dict[str, Any] = {
            "id": i,
            "tokens": rng.integers(0, 50, size=int(rng.integers(4, 40)), dtype=np.uint16),
        }
        if with_text:
            sample["text"] = _text(rng, int(rng.integers(3, 30)))
        samples.append(sample)
    return samples


def _table_samples(name: str, n: int) -> list[dict[str, Any]]:
    rng = _rng(name)
    out = []
    for i in range(n):
        out.append({
            "id": int(rng.integers(-10**12, 10**12)) if i % 7 else -i,
            "text": _text(rng, int(rng.integers(1, 12))) + ("" if i % 5 else " ünïcödé \"q\""),
            "score": [float(rng.normal()), 1e-7, 2.0, -1234.5e100, 0.1][i % 5],
        })
    return out


_TOKEN_COLUMNS = {"id": "int", "tokens": "ndarray:uint16", "text": "str"}
_TABLE_COLUMNS = {"id": "int", "text": "str", "score": "float"}


def _case(name: str, writer: str, kwargs: dict[str, Any], samples: list[dict[str, Any]],
          split: str | None = None, needs: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"name": name, "writer": writer, "kwargs": kwargs, "samples": samples, "split": split,
            "needs": list(needs)}


def _mds_cases() -> list[dict[str, Any]]:
    cases = [
        _case("mds_scalars", "MDSWriter",
              {"columns": _scalars_columns(), "hashes": ["sha1", "xxh64"]}, _scalars_samples()),
        _case("mds_ndarrays", "MDSWriter",
              {"columns": {"dyn": "ndarray", "int16_var": "ndarray:int16",
                           "f32_fixed": "ndarray:float32:2,3", "u64_fixed": "ndarray:uint64:4",
                           "u8_var": "ndarray:uint8"},
               "hashes": ["md5", "sha3_256"], "size_limit": None}, _ndarray_samples()),
        _case("mds_images", "MDSWriter", {"columns": _image_columns(), "hashes": ["xxh3_128"]},
              _image_samples(), needs=(NEEDS_PILLOW,)),
        _case("mds_pickle", "MDSWriter", {"columns": {"obj": "pkl", "idx": "int"}},
              _pickle_samples(), needs=(NEEDS_PICKLE, NEEDS_NUMPY)),
        _case("mds_preencoded", "MDSWriter",
              {"columns": {"s": "str", "n": "int", "a": "ndarray:uint8:4", "p": "str_int"}},
              _preencoded_samples()),
        _case("mds_all_hashes", "MDSWriter",
              {"columns": _TOKEN_COLUMNS, "hashes": list(ALL_HASHES), "size_limit": 1500},
              _token_samples("all_hashes", 12)),
        _case("mds_multishard", "MDSWriter",
              {"columns": _TOKEN_COLUMNS, "size_limit": "1kb", "hashes": ["xxh32"]},
              _token_samples("multishard", 40)),
        # QUIRK: a first sample bigger than size_limit yields an empty shard.00000.mds.
        _case("mds_oversized_first", "MDSWriter",
              {"columns": {"blob": "bytes", "id": "int"}, "size_limit": 300},
              [{"blob": bytes(400), "id": 0}, {"blob": b"ab", "id": 1},
               {"blob": bytes(range(250)), "id": 2}, {"blob": b"", "id": 3}]),
    ]
    for split in ("train", "val"):
        cases.append(_case(f"mds_split_{split}", "MDSWriter",
                           {"columns": _TOKEN_COLUMNS, "size_limit": 2048, "hashes": ["sha256"]},
                           _token_samples(f"split_{split}", 10), split=split))
    hashes = (["sha1"], ["xxh64"], ["md5"], [], ["sha256", "xxh3_64"], ["blake2s"],
              ["blake2b", "xxh128"], ["sha3_256", "xxh3_128"], ["sha1", "xxh32"], ["sha512"])
    for comp, hs in zip(COMPRESSIONS, hashes):
        name = "mds_" + comp.replace(":", "_")
        cases.append(_case(name, "MDSWriter",
                           {"columns": _TOKEN_COLUMNS, "compression": comp, "hashes": hs,
                            "size_limit": 2048}, _token_samples(name, 30)))
    return cases


def _text_cases() -> list[dict[str, Any]]:
    return [
        _case("jsonl_basic", "JSONWriter",
              {"columns": _TABLE_COLUMNS, "hashes": ["md5"], "size_limit": 600},
              _table_samples("jsonl_basic", 25)),
        _case("jsonl_zstd_crlf", "JSONWriter",
              {"columns": _TABLE_COLUMNS, "compression": "zstd", "newline": "\r\n",
               "hashes": ["sha1", "xxh64"], "size_limit": 800}, _table_samples("jsonl_zstd", 25)),
        _case("csv_basic", "CSVWriter",
              {"columns": _TABLE_COLUMNS, "hashes": ["xxh3_64"], "size_limit": 400},
              _table_samples("csv_basic", 25)),
        _case("csv_gz", "CSVWriter",
              {"columns": _TABLE_COLUMNS, "compression": "gz:5", "hashes": ["sha256"],
               "size_limit": 500}, _table_samples("csv_gz", 20)),
        _case("tsv_basic", "TSVWriter",
              {"columns": _TABLE_COLUMNS, "hashes": ["md5", "sha1"], "size_limit": 500},
              _table_samples("tsv_basic", 20)),
        _case("xsv_pipe", "XSVWriter",
              {"columns": _TABLE_COLUMNS, "separator": "|", "compression": "snappy",
               "hashes": ["xxh128"], "size_limit": 500}, _table_samples("xsv_pipe", 20)),
        _case("xsv_multichar", "XSVWriter",
              {"columns": _TABLE_COLUMNS, "separator": "::", "newline": "\r\n",
               "size_limit": None}, _table_samples("xsv_multichar", 8)),
    ]


CASE_BUILDERS: tuple[Callable[[], list[dict[str, Any]]], ...] = (_mds_cases, _text_cases)


def all_cases() -> list[dict[str, Any]]:
    """Every fixture case, in a stable order."""
    return [case for build in CASE_BUILDERS for case in build()]
