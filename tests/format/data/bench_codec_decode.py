"""Micro-benchmark of per-value decode and batched decode, ours vs the reference (not a test).

    .venv/bin/python tests/format/data/bench_codec_decode.py ours
    /path/to/refvenv/bin/python tests/format/data/bench_codec_decode.py ref

Prints the best-of-9 time per `mds_decode` (registry lookup included) and per `decode` on a
reused coder; then, per row, `decode_many` over a strided 10 000-row column (ours) or a loop of
`mds_decode` over the row slices (the reference, which has no batched path).
"""

from __future__ import annotations

import os
import sys
import timeit

import numpy as np

OURS = len(sys.argv) > 1 and sys.argv[1] == "ours"
if OURS:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    from streaming.format.encodings import get_encoding as coder_for, mds_decode, mds_encode
else:
    from streaming.base.format.mds.encodings import _get_coder as coder_for, mds_decode, mds_encode

CASES = {
    "int": 123456789,
    "ndarray:uint16:1024": np.arange(1024, dtype=np.uint16),
    "ndarray:uint16": np.arange(1024, dtype=np.uint16),
    "str": "hello world, this is a caption of medium length for an image " * 2,
    "bytes": bytes(100_000),
}
ROWS = 10_000


def best_us(call: object, number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=9)) / number * 1e6


def main() -> None:
    for encoding, value in CASES.items():
        data = mds_encode(encoding, value)
        coder = coder_for(encoding)
        registry = best_us(lambda: mds_decode(encoding, data), 100_000)
        direct = best_us(lambda: coder.decode(data), 100_000)
        print(f"{encoding:22s} mds_decode {registry:6.3f} us | decode {direct:6.3f} us")
    for encoding, value in [("int", 5), ("uint16", 7), ("float32", 1.5),
                            ("ndarray:uint16:1024", np.arange(1024, dtype=np.uint16))]:
        payload = mds_encode(encoding, value)
        size, record = len(payload), len(payload) + 12
        shard = b"".join(b"head" + payload + b"trailing" for _ in range(ROWS))
        if OURS:
            rows = np.frombuffer(shard, np.uint8).reshape(ROWS, record)[:, 4 : 4 + size]
            coder = coder_for(encoding)
            per_row = best_us(lambda: coder.decode_many(rows), 20) / ROWS
            print(f"{encoding:22s} decode_many {per_row * 1000:8.3f} ns/row")
        else:
            parts = [shard[i * record + 4 : i * record + 4 + size] for i in range(ROWS)]
            per_row = best_us(lambda: [mds_decode(encoding, p) for p in parts], 3) / ROWS
            print(f"{encoding:22s} mds_decode loop {per_row * 1000:8.1f} ns/row")


if __name__ == "__main__":
    main()
