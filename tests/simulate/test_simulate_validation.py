"""The simulator against real runs of the same configurations (the validation of #13).

Each case runs an epoch three times for real (HTTP server behind the fault proxy's shared
`link`, real DataLoader workers, a sleeping training step) and once in the simulator. Bytes
fetched, fetches, evictions and refetches must match exactly on every run; the real runs'
median throughput and time to first batch must be within 25 %. The machine's constants (loader
start-up, time per sample and per fetch) are measured on unthrottled runs just before, under the
same load (`validation.calibrate`). The cases are the ones whose counts do not depend on thread
timing (the cache holds every worker's prefetch window, so only shards already read are
evicted): with reads that outrun a tight cache, which shard is evicted depends on which worker
got there first, and so do the counts (see benchmarks/README.md for the measured error there).
"""

from __future__ import annotations

import statistics

import pytest

from tests.simulate.validation import Case, calibrate, real_run, serve, sim_run, write_dataset

pytestmark = pytest.mark.slow

CASES = [
    Case("network-bound", workers=2, bandwidth=2e6),
    Case("cache limit, step-bound", workers=2, bandwidth=4e6, cache_limit=1_200_000,
         predownload=100, step_seconds_per_sample=1e-3),
    Case("latency, one worker", workers=1, bandwidth=8e6, latency=0.02),
]


def _tolerance(values: list[float]) -> float:
    """25 %, or the real runs' own spread around their median when the machine's load makes
    them differ more than that (three first batches of 0.24, 0.35 and 0.39 s under a loaded
    suite): a prediction cannot be held closer than the runs agree with each other."""
    median = statistics.median(values)
    return max(0.25, (max(values) - min(values)) / median) if median > 0 else 0.25


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("simulate")
    served = serve(write_dataset(str(root / "data")), str(root / "http"))
    yield served, str(root / "cache")
    served.stop()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_simulator_predicts_a_real_run(served, case):
    dataset, cache = served
    for _attempt in (1, 2):
        # The machine's constants and three real runs, measured together (under the same
        # load); the times compared are the real runs' medians.
        constants = calibrate(dataset, cache, case)
        reals = [real_run(dataset, cache, case) for _ in range(3)]
        sim = sim_run(dataset, case, constants)
        for real in reals:  # counts are exact, at every attempt
            for key in ("samples", "fetch_bytes", "fetches", "evictions", "refetches"):
                assert sim[key] == real[key], (key, sim, real)
        if case.cache_limit:
            assert reals[0]["evictions"] > 0  # the limit really bit
        off = [(key, sim[key], reals) for key in ("samples_per_second", "first_batch_seconds")
               if sim[key] != pytest.approx(statistics.median(r[key] for r in reals),
                                            rel=_tolerance([r[key] for r in reals]))]
        # A timing off once is measured again (a loaded machine can upset one calibration: a
        # first batch predicted 0.29 s against 0.22 s, in one full suite out of many); a model
        # that is wrong is off twice.
        if not off:
            return
    raise AssertionError(off)
