"""Shared helpers of the compat tests: load fixture cases, write them with ours, compare samples.

Fixtures live in data/<case>/ (made by make_reference_fixtures.py under the reference); each has
an expected.json with the writer arguments, the inputs and the reference's decoded samples in
portable form. Imports of our package happen inside functions so collection never fails on them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import pickle
import warnings
from typing import Any

import compat_layout as layout
import compat_portable as portable
import numpy as np
from compat_layout import check_file_info, dataset_dir, listing, read_bytes  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
# Compression family -> distribution whose version decides the compressed bytes.
_CODEC_DISTS = {"br": "brotli", "zstd": "zstd", "snappy": "python-snappy", "bz2": None}
# A JPEG decoded by another libjpeg may differ by rounding; allow this mean |diff| per channel.
_JPEG_TOLERANCE = 4.0


def manifest() -> dict[str, Any]:
    """Versions the fixtures were generated with."""
    with open(os.path.join(DATA, "MANIFEST.json")) as f:
        return json.load(f)


def case_names() -> list[str]:
    """Every committed fixture case."""
    return sorted(d for d in os.listdir(DATA)
                  if os.path.isfile(os.path.join(DATA, d, "expected.json")))


def load_case(name: str) -> dict[str, Any]:
    with open(os.path.join(DATA, name, "expected.json")) as f:
        return json.load(f)


def case_inputs(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The exact sample dicts the reference writer was given."""
    return [{k: portable.from_portable(v) for k, v in s["input"].items()} for s in case["samples"]]


def ours(module_tail: str) -> Any:
    """Our module under the reference's import path, falling back to the new layout."""
    try:
        return importlib.import_module(f"streaming.base.{module_tail}")
    except ImportError:
        return importlib.import_module(f"streaming.format.{module_tail}")


def write_with_ours(case: dict[str, Any], root: str) -> str:
    """Write a case's inputs with our writer; returns the dataset (split) directory."""
    import streaming

    out = layout.dataset_dir(root, case["split"])
    writer_class = getattr(streaming, case["writer"])
    with warnings.catch_warnings():
        if case["name"] == "mds_oversized_first":  # over size_limit on purpose: warns, expected
            warnings.simplefilter("ignore", UserWarning)
        with writer_class(out=out, **case["kwargs"]) as writer:
            for sample in case_inputs(case):
                writer.write(sample)
    return out


def unpack_copy(src: str, dst: str) -> None:
    """Copy a dataset dir and decompress its zip files with our codecs, checking hashes."""
    layout.unpack_copy(src, dst, ours("compression").decompress, ours("hashing").get_hash)


def unpacked_fixture(case: dict[str, Any], tmp: str) -> str:
    """A decompressed, hash-checked copy of a fixture; returns the root to open with `split`."""
    root = os.path.join(tmp, case["name"])
    unpack_copy(dataset_dir(os.path.join(DATA, case["name"]), case["split"]),
                dataset_dir(root, case["split"]))
    return root


def portable_sample(sample: dict[str, Any]) -> dict[str, Any]:
    return {k: portable.to_portable(v) for k, v in sample.items()}


def pillow_matches() -> bool:
    return importlib.metadata.version("pillow") == manifest()["versions"]["pillow"]


def unmet_needs(case: dict[str, Any]) -> list[str]:
    """Why this machine cannot be expected to write the reference's exact bytes (empty: it can)."""
    versions = manifest()["versions"]
    have = {
        "pillow": (importlib.metadata.version("pillow"), versions["pillow"]),
        "pickle_protocol": (pickle.DEFAULT_PROTOCOL, manifest()["pickle_protocol"]),
        "numpy_major": (np.__version__.split(".")[0], versions["numpy"].split(".")[0]),
    }
    return [f"{need}: here {have[need][0]}, fixtures {have[need][1]}"
            for need in case["needs"] if have[need][0] != have[need][1]]


def codec_matches(compression: str | None) -> bool:
    """Whether the installed codec library is the one that produced the fixture's zip bytes."""
    family = (compression or "").split(":")[0]
    if family == "gz":
        return False  # gzip headers embed the write time
    dist = _CODEC_DISTS.get(family)
    return dist is None or importlib.metadata.version(dist) == manifest()["versions"][dist]


def assert_samples_match(actual: dict[str, Any], expected: dict[str, Any], where: str) -> None:
    """Compare portable samples; JPEG pixels get a tolerance when Pillow is not the fixtures'."""
    assert sorted(actual) == sorted(expected), \
        f"{where}: columns {sorted(actual)} != {sorted(expected)}"
    loose = not pillow_matches()
    for key in expected:
        _assert_equal(actual[key], expected[key], f"{where}[{key!r}]", loose)


def _assert_equal(actual: Any, expected: Any, where: str, loose_jpeg: bool) -> None:
    if loose_jpeg and isinstance(expected, dict) and expected.get("format") == "JPEG":
        assert isinstance(actual, dict) and actual.get("format") == "JPEG", where
        assert (actual["$image"], actual["size"]) == (expected["$image"], expected["size"]), where
        got, want = (np.frombuffer(portable._unb64(x["data"]), np.uint8).astype(float)
                     for x in (actual, expected))
        assert np.abs(got - want).mean() <= _JPEG_TOLERANCE, f"{where}: JPEG pixels differ"
        return
    if loose_jpeg and isinstance(expected, list) and isinstance(actual, list):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_equal(a, e, f"{where}[{i}]", loose_jpeg)
        return
    assert actual == expected, f"{where}: got {_short(actual)}, want {_short(expected)}"


def _short(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True)
    return text if len(text) < 300 else text[:300] + "..."
