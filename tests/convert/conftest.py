"""Fixtures of the conversion tests: small MDS sub-datasets and one local-mode SparkSession."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Ray reads this when it is imported: a one-machine cluster on 127.0.0.1, never the machine's
# routable address (which Ray would otherwise advertise and bind).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


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


@pytest.fixture(scope="session")
def engine_s3() -> Iterator[Any]:
    """A moto S3 server on 127.0.0.1 for the cluster-engine tests (workers and driver)."""
    from streaming.storage.testing import ServerUnavailable, start_moto

    try:
        server = start_moto()
    except ServerUnavailable as err:
        pytest.skip(str(err))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ray_runtime(engine_s3: Any) -> Iterator[Any]:
    """A local Ray runtime for one test module: 2 CPUs, no dashboard, loopback only.

    Per module, not per session: later tests fork this process (DataLoader workers), and a
    fork of a process holding Ray's gRPC channels left ``ray.shutdown()`` hanging at the end
    of the session; shut down before the other modules run, it never is.

    Loopback only (see ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` above). Workers get the S3
    server's variables and the repository on their path.
    """
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    saved = {k: os.environ.get(k) for k in ("RAY_USAGE_STATS_ENABLED", "RAY_AUTH_MODE")}
    os.environ.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    worker_env = dict(engine_s3.env(), PYTHONPATH=REPO, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": worker_env}, logging_level="ERROR")
    import ray.data

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def dask_client(engine_s3: Any) -> Iterator[Any]:
    """Dask's distributed scheduler in this process with 2 worker processes, on 127.0.0.1;
    the workers get the S3 server's variables."""
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    import dask

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       env=dict(engine_s3.env(), PYTHONPATH=REPO))
    client = distributed.Client(cluster)
    try:
        with dask.config.set({"dataframe.convert-string": False}):
            yield client
    finally:
        client.close()
        cluster.close()
