"""Importing the dataset pauses collection while torch loads and freezes what the import made
(see `streaming/__init__.py`), in a fresh interpreter each time."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = """
import gc, json, sys
first = {first!r}
if first:
    exec(first)
import streaming
streaming.StreamingDataset
print(json.dumps({{"frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}}))
"""


def _probe(first: str = "", **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE.format(first=first)], check=True,
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=ROOT, **env))
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", ["default", "opted out", "torch first", "gc off"])
def test_freeze_only_when_this_import_brings_torch(case: str) -> None:
    if case == "default":
        got = _probe()
        assert got["frozen"] > 50_000 and got["enabled"]
    elif case == "opted out":
        assert _probe(STREAMING_GC_FREEZE="0") == {"frozen": 0, "enabled": True}
    elif case == "torch first":  # the user's own import paid for torch: leave the gc alone
        assert _probe("import torch") == {"frozen": 0, "enabled": True}
    else:  # a process that turned collection off keeps it off
        assert _probe("gc.disable()") == {"frozen": 0, "enabled": False}
