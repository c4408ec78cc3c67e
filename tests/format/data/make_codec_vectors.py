"""Regenerate `codec_vectors.json` with the reference implementation (run once, commit output).

Usage, with an interpreter that has `mosaicml-streaming==0.13.0` installed (never ours):

    /path/to/refvenv/bin/python tests/format/data/make_codec_vectors.py

Records, for every case of `codec_cases.py`: the reference's `mds_encode` bytes (in full, or a
sha256 plus the first bytes when large) and the type it decodes back to; the reference's
`compress` output for each (spec, input) pair, with gzip's clock pinned; every hash digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import platform
import sys
import time
from importlib.metadata import version

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # tests/format, for codec_cases

import codec_cases as cases  # noqa: E402
import numpy as np  # noqa: E402

from streaming.base import compression, hashing  # noqa: E402
from streaming.base.format.mds import encodings  # noqa: E402

INLINE_LIMIT = 4096  # bytes kept as hex; longer outputs are stored as sha256 + head


def _qualname(obj: object) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def _bytes_record(data: bytes) -> dict:
    if len(data) <= INLINE_LIMIT:
        return {"size": len(data), "hex": data.hex()}
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "head": data[:64].hex()}


def _mds_record(encoding: str, value: object) -> dict:
    data = encodings.mds_encode(encoding, value)
    record = {"encoding": encoding, **_bytes_record(data)}
    try:
        decoded = encodings.mds_decode(encoding, data)
    except Exception as err:  # jpeg_array cases holding stand-in bytes, not real JPEGs
        record["decode_error"] = type(err).__name__
        return record
    record["decoded_type"] = _qualname(decoded)
    if isinstance(decoded, np.ndarray):
        record["decoded_dtype"] = decoded.dtype.str
        record["decoded_shape"] = list(decoded.shape)
    if isinstance(decoded, list) and decoded:
        record["element_type"] = _qualname(decoded[0])
    return record


def _compression_records() -> dict:
    inputs = cases.compression_inputs()
    real_time = time.time
    time.time = lambda: float(cases.GZIP_MTIME)  # gzip.compress stamps the header with this
    try:
        return {
            f"{spec}|{name}": compression.compress(spec, data).hex()
            for spec in cases.COMPRESSION_SPECS
            for name, data in inputs.items()
        }
    finally:
        time.time = real_time


def main() -> None:
    vectors = {
        "generated_with": {
            "mosaicml-streaming": version("mosaicml-streaming"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "pillow": version("pillow"),
            "pickle_protocol": pickle.DEFAULT_PROTOCOL,
        },
        "mds": {case: _mds_record(enc, make()) for case, (enc, make) in cases.MDS_CASES.items()},
        "compression": _compression_records(),
        "hashes": {
            f"{algo}|{name}": hashing.get_hash(algo, data)
            for algo in sorted(hashing.get_hashes())
            for name, data in cases.hash_inputs().items()
        },
    }
    with open(os.path.join(HERE, "codec_vectors.json"), "w") as f:
        json.dump(vectors, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
