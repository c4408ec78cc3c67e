"""Fixtures of the coordination tests: a private temp dir, so state dirs never mix with runs."""

from __future__ import annotations

import multiprocessing as mp
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def coord_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Make `tempfile.gettempdir()` (here, in forked and in spawned children) a fresh dir."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    yield str(tmp)
    from streaming.coord.cleanup import _clean_namespaces

    _clean_namespaces()  # leftovers of holders the test killed (still pointed at `tmp`)


@pytest.fixture(params=["fork", "spawn"])
def ctx(request: pytest.FixtureRequest) -> mp.context.BaseContext:
    """A multiprocessing context of each start method."""
    return mp.get_context(request.param)
