"""What the reference library reads from datasets our convert scripts wrote: it runs
`tests/compat/reference_reader.py` in the reference's own interpreter (skipping the test when
there is none) and returns the samples it saw, in the portable form of `compat_portable`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPAT = os.path.join(REPO, "tests", "compat")
REFERENCE = os.environ.get("STREAMING_REFERENCE_PYTHON") or os.path.join(
    REPO, ".bench", "venvs", "reference", "bin", "python")


def need_reference() -> None:
    """Skip the calling test when the reference's interpreter is not there."""
    if not os.path.exists(REFERENCE):
        pytest.skip(f"no reference interpreter at {REFERENCE}")


def reference_reads(root: Any, *specs: str) -> dict[str, Any]:
    """`{name: {"get": [...], ...}}` for each ``name[:split]`` dataset under `root`, as the
    reference reads it (run from `root`, so it imports its own `streaming`, not ours)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([REFERENCE, os.path.join(COMPAT, "reference_reader.py"), str(root),
                           *specs], capture_output=True, text=True, env=env, cwd=str(root),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def portable() -> ModuleType:
    """`tests/compat/compat_portable`, which turns samples into the reader's JSON form."""
    sys.path.insert(0, COMPAT)
    try:
        import compat_portable
    finally:
        sys.path.remove(COMPAT)
    return compat_portable
