"""The reference (mosaicml-streaming 0.13.0) reads every dataset our writers produce.

Runs only when STREAMING_REFERENCE_PYTHON names an interpreter with the reference installed
(see make_reference_fixtures.py for how to make one). All cases are written with ours into one
tmp dir, then one reference process decodes them with LocalDataset and StreamingDataset.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import compat_support as cs
import pytest

pytestmark = [pytest.mark.reference, pytest.mark.slow]
REFERENCE = os.environ.get("STREAMING_REFERENCE_PYTHON")
CASES = cs.case_names()


@pytest.fixture(scope="module")
def reference_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not REFERENCE:
        pytest.skip("set STREAMING_REFERENCE_PYTHON to an interpreter with mosaicml-streaming")
    root = str(tmp_path_factory.mktemp("ours"))
    specs = []
    for name in CASES:
        case = cs.load_case(name)
        cs.write_with_ours(case, os.path.join(root, name))
        specs.append(f"{name}:{case['split']}" if case["split"] else name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([REFERENCE, os.path.join(cs.HERE, "reference_reader.py"), root, *specs],
                          capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", CASES)
def test_reference_reads_ours(name: str, reference_output: dict[str, Any]) -> None:
    case = cs.load_case(name)
    views = reference_output[name]
    assert set(views) >= {"get", "iter"}
    if not case["kwargs"].get("compression"):
        assert "local" in views
    want = [s["decoded"] for s in case["samples"]]
    for view, got in views.items():
        assert len(got) == len(want), f"{name} {view}: {len(got)} samples, want {len(want)}"
        if view == "iter":  # iteration order is the reference's to choose; compare as a multiset
            got = sorted(got, key=lambda s: json.dumps(s, sort_keys=True))
            want_view = sorted(want, key=lambda s: json.dumps(s, sort_keys=True))
        else:
            want_view = want
        for i, (sample, expected) in enumerate(zip(got, want_view)):
            cs.assert_samples_match(sample, expected, f"{name} {view} {i}")
