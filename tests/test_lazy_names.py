"""`lazy_names`: package attributes imported on first access, and what that keeps out of a
reading process (the writers, their uploads and progress bars)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from streaming.lazy_names import lazy_names

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture()
def package() -> Iterator[types.ModuleType]:
    module = types.ModuleType("lazy_probe")
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


def test_a_name_resolves_on_first_access_and_then_is_a_plain_attribute(
        package: types.ModuleType) -> None:
    get = lazy_names(package.__name__, {"join": "os.path", "sep": "os:sep"})
    assert "join" not in vars(package)
    assert get("join") is os.path.join
    assert vars(package)["join"] is os.path.join  # later lookups never reach __getattr__
    assert get("sep") == os.sep


def test_other_names_go_to_the_fallback_or_raise_attribute_error(
        package: types.ModuleType) -> None:
    get = lazy_names(package.__name__, {"join": "os.path"})
    with pytest.raises(AttributeError, match="'lazy_probe' has no attribute 'nope'"):
        get("nope")
    with_fallback = lazy_names(package.__name__, {}, fallback=lambda name: f"made {name}")
    assert with_fallback("nope") == "made nope"


def test_each_import_runs_inside_the_importing_context(package: types.ModuleType) -> None:
    seen: list[str] = []

    @contextlib.contextmanager
    def importing() -> Iterator[None]:
        seen.append("enter")
        yield
        seen.append("exit")

    get = lazy_names(package.__name__, {"join": "os.path"}, importing=importing)
    get("join")
    assert seen == ["enter", "exit"]


def test_a_broken_module_raises_its_own_error_not_attribute_error(
        package: types.ModuleType) -> None:
    get = lazy_names(package.__name__, {"thing": "streaming.no_such_module_here"})
    with pytest.raises(ModuleNotFoundError, match="no_such_module_here"):
        get("thing")


_READ_ONLY = """
import json, sys
from streaming import StreamingDataset
dataset = StreamingDataset(local={local!r}, batch_size=4)
ids = [int(sample["id"]) for sample in dataset]
def writing():
    return sorted(m for m in sys.modules if m.startswith("streaming.") and
                  ("writer" in m or m.endswith(".sink") or m.startswith("streaming.convert")))
after_read = writing()
from streaming.format import MDSWriter as via_format
from streaming.format.mds import MDSWriter as via_mds
import streaming
print(json.dumps({{"ids": ids, "after_read": after_read, "after_writer": writing(),
                   "same": via_format is via_mds is streaming.MDSWriter}}))
"""


def test_reading_a_dataset_never_imports_the_writers(tmp_path: Path) -> None:
    from streaming import MDSWriter

    local = str(tmp_path / "data")
    with MDSWriter(out=local, columns={"id": "int64", "x": "ndarray:uint8"}) as out:
        for i in range(20):
            out.write({"id": i, "x": np.full(8, i, np.uint8)})
    done = subprocess.run([sys.executable, "-c", _READ_ONLY.format(local=local)],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["ids"] == list(range(20))
    assert got["after_read"] == []
    # the probe sees the writers once they are asked for
    assert "streaming.format.mds.writer" in got["after_writer"]
    assert "streaming.storage.sink" in got["after_writer"]
    assert got["same"]
