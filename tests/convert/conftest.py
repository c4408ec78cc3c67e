"""Fixtures of the conversion tests: small MDS sub-datasets and one local-mode SparkSession."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def write_mds() -> Callable[..., str]:
    """``write_mds(dir, ids, **writer_kwargs)``: an MDS dataset of ``{"id": int, "text": str}``."""
    from streaming import MDSWriter

    def write(out: Any, ids: range | list[int], **kwargs: Any) -> Any:
        kwargs.setdefault("columns", {"id": "int", "text": "str"})
        with MDSWriter(out=out, **kwargs) as writer:
            for i in ids:
                writer.write({"id": i, "text": f"sample {i}"})
        return out

    return write


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession bound to 127.0.0.1, shared by every Spark test (it takes ~10 s)."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                                            "SPARK_LOCAL_IP", "PYTHONPATH")}
    os.environ.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                      SPARK_LOCAL_IP="127.0.0.1")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, saved["PYTHONPATH"]]))
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("shardstream-tests")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
