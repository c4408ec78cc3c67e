"""Fixtures of the command-line tests: run `python -m streaming` for real, and small datasets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def one_error(run: Run, *needles: str) -> None:
    """`run` failed with exit 1 and one ``Error: ...`` line holding every needle, no traceback."""
    assert run.code == 1, (run.code, run.err)
    assert "Traceback" not in run.err, run.err
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), run.err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def cli(tmp_path: Any) -> Callable[..., Run]:
    """``cli("inspect", path, ...)``: the real entry point in a subprocess, private TMPDIR."""
    env = dict(os.environ, PYTHONPATH=REPO, TMPDIR=str(tmp_path), COLUMNS="200")

    def run(*args: str) -> Run:
        proc = subprocess.run([sys.executable, "-m", "streaming", *args], capture_output=True,
                              text=True, env=env, cwd=str(tmp_path), timeout=120)
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def dataset(tmp_path: Any) -> str:
    """An MDS dataset of 3 zstd shards with sha1+xxh64 digests: id, tokens, blob, text."""
    from streaming import MDSWriter

    out = str(tmp_path / "ds")
    columns = {"id": "int", "tokens": "ndarray:int32", "blob": "bytes", "text": "str"}
    with MDSWriter(out=out, columns=columns, compression="zstd", hashes=["sha1", "xxh64"],
                   size_limit=1500) as writer:
        for i in range(30):
            writer.write({"id": i, "tokens": np.arange(i % 4 + 1, dtype=np.int32),
                          "blob": bytes([i]) * 40, "text": f"sample {i}"})
    return out
