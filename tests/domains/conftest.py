"""Fixtures for the domain datasets: tiny MDS datasets written with our writer."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from streaming import MDSWriter


@pytest.fixture
def write_mds(tmp_path) -> Callable[..., str]:
    """write_mds(columns, samples, **writer_kwargs) -> directory of a fresh MDS dataset."""
    counter = itertools.count()

    def write(columns: dict[str, str], samples: Iterable[dict[str, Any]], **kwargs: Any) -> str:
        out = str(tmp_path / f"remote{next(counter)}")
        with MDSWriter(out=out, columns=columns, **kwargs) as writer:
            for sample in samples:
                writer.write(sample)
        return out

    return write


@pytest.fixture
def cache_dir(tmp_path) -> Callable[[], str]:
    counter = itertools.count()
    return lambda: str(tmp_path / f"cache{next(counter)}")
