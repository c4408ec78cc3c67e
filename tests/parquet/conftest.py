"""Fixtures for the Parquet-in-place tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from streaming import MDSWriter


@pytest.fixture
def make_mds() -> Callable[..., str]:
    """A small MDS dataset of {'id': int} rows 0..n-1 at the given folder."""

    def make(out: str, n: int = 20, start: int = 0) -> str:
        with MDSWriter(out=out, columns={"id": "int"}, size_limit=200) as writer:
            for i in range(start, start + n):
                writer.write({"id": i})
        return out

    return make
