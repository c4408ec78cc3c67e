"""Write the reference fixtures under tests/compat/data with mosaicml-streaming 0.13.0.

How the committed files were made (re-run the same command to regenerate them all):

    python -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.14.1 torchvision==0.29.1 \
        mosaicml-streaming==0.13.0 'filelock<3.30'
    /tmp/refvenv/bin/python tests/compat/make_reference_fixtures.py

Generated with mosaicml-streaming 0.13.0, numpy 2.1.3, Pillow 13.0.0, zstd 1.5.7.2,
brotli 1.2.1, python-snappy 0.7.3 on CPython 3.11 (exact versions: data/MANIFEST.json).
The reference is never a project dependency: this script runs only under that scratch
interpreter. For every case in fixture_cases.py it writes the dataset with the reference writer
into data/<case>/[<split>/], reads it back with the reference LocalDataset (after decompressing a
copy with the reference codecs) and stores data/<case>/expected.json: writer arguments, the input
samples and the reference's decoded samples, both in the portable form of compat_portable.py.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import pickle
import platform
import shutil
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
sys.path.insert(0, HERE)

import compat_layout as layout  # noqa: E402
import compat_portable as portable  # noqa: E402
import fixture_cases  # noqa: E402

_DIST_VERSIONS = ("mosaicml-streaming", "numpy", "pillow", "zstd", "brotli", "python-snappy",
                  "xxhash", "torch")


def _writer_class(name: str) -> Any:
    import streaming

    return getattr(streaming, name)


def _write(case: dict[str, Any], root: str) -> None:
    out = layout.dataset_dir(root, case["split"])
    with _writer_class(case["writer"])(out=out, **case["kwargs"]) as writer:
        for sample in case["samples"]:
            writer.write(sample)


def _read_back(case: dict[str, Any], root: str) -> list[dict[str, Any]]:
    from streaming import LocalDataset
    from streaming.base.compression import decompress
    from streaming.base.hashing import get_hash

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "copy")
        layout.unpack_copy(layout.dataset_dir(root, case["split"]),
                           layout.dataset_dir(copy, case["split"]), decompress, get_hash)
        dataset = LocalDataset(local=copy, split=case["split"])
        decoded = [dataset[i] for i in range(len(dataset))]
        return [{k: portable.to_portable(v) for k, v in s.items()} for s in decoded]


def _expected(case: dict[str, Any], root: str) -> dict[str, Any]:
    decoded = _read_back(case, root)
    if len(decoded) != len(case["samples"]):
        raise RuntimeError(f"{case['name']}: wrote {len(case['samples'])}, read {len(decoded)}")
    return {
        "name": case["name"],
        "writer": case["writer"],
        "kwargs": case["kwargs"],
        "split": case["split"],
        "needs": case["needs"],
        "files": layout.listing(layout.dataset_dir(root, case["split"])),
        "samples": [
            {"input": {k: portable.to_portable(v) for k, v in s.items()}, "decoded": d}
            for s, d in zip(case["samples"], decoded)
        ],
    }


def _manifest() -> dict[str, Any]:
    versions = {name: importlib.metadata.version(name) for name in _DIST_VERSIONS}
    return {
        "generator": "tests/compat/make_reference_fixtures.py",
        "python": platform.python_version(),
        "pickle_protocol": pickle.DEFAULT_PROTOCOL,
        "versions": versions,
    }


def main() -> None:
    """Regenerate every fixture case from scratch."""
    import streaming

    if streaming.__version__ != "0.13.0" or hasattr(streaming, "__shardstream_version__"):
        raise SystemExit(f"needs mosaicml-streaming 0.13.0, found {streaming.__version__}")
    shutil.rmtree(DATA, ignore_errors=True)
    os.makedirs(DATA)
    for case in fixture_cases.all_cases():
        root = os.path.join(DATA, case["name"])
        _write(case, root)
        expected = _expected(case, root)
        with open(os.path.join(root, "expected.json"), "w") as f:
            json.dump(expected, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{case['name']}: {len(expected['samples'])} samples, {len(expected['files'])} files")
    with open(os.path.join(DATA, "MANIFEST.json"), "w") as f:
        json.dump(_manifest(), f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
