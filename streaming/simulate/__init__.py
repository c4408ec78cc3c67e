"""Predict a run before launching it: throughput over time, time to first batch, bytes
downloaded per node, cache use and evictions.

`simulate` plans every epoch with the real planner (the exact sample order of
`StreamingDataset` in that world) and runs a discrete-event model of the nodes' links, caches,
DataLoader workers and the synchronous training step (`streaming.simulate.model`), whose cache
and prefetch decisions are the runtime's own (`choose_evictions`, `UseSchedule`, `LinkSizer`):

    from streaming.simulate import SimConfig, simulate

    result = simulate(["s3://bucket/data"], SimConfig(nodes=4, ranks_per_node=8, workers=8,
                      batch_size=32, bandwidth=500e6, latency=0.02, cache_limit=20 * 2**30,
                      step_seconds_per_sample=0.002))
    print(result.render())

Only index files are read. `streaming simulate` is the command line over it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from streaming.cache.limits import check_cache_limit, check_readers_fit
from streaming.order.request import PlanRequest, StreamSpec, plan_request
from streaming.progress import Progress, make_progress
from streaming.simulate.config import SimConfig
from streaming.simulate.model import Model, SimulationError
from streaming.simulate.result import EpochReport, NodeReport, SimResult, timeline
from streaming.simulate.shards import SimStream, stream_of_dataset

__all__ = ["SimConfig", "SimResult", "SimStream", "SimulationError", "simulate",
           "stream_of_dataset"]


def _request(streams: Sequence[SimStream], config: SimConfig, epoch: int) -> PlanRequest:
    return PlanRequest(
        streams=[StreamSpec(s.samples, s.proportion, s.repeat, s.choose, s.name) for s in streams],
        options=config.options(), nodes=config.nodes, ranks_per_node=config.ranks_per_node,
        workers=config.readers_per_rank, epoch=epoch)


def _check(streams: Sequence[SimStream], config: SimConfig, samples_per_epoch: int,
           index_bytes: int, cache_bytes: np.ndarray, resident_bytes: np.ndarray) -> None:
    readers = config.nodes * config.ranks_per_node * config.readers_per_rank
    if samples_per_epoch < readers:
        raise ValueError(
            f"{readers} readers ({config.nodes} node(s) x {config.ranks_per_node} rank(s) x "
            f"{config.readers_per_rank} worker(s)) but only {samples_per_epoch} samples per "
            f"epoch: some would read nothing. Use fewer workers or ranks.")
    if config.cache_limit is not None:
        # The dataset's own check, with its message: a run the dataset refuses is refused here.
        check_cache_limit(config.cache_limit, index_bytes, cache_bytes,
                          np.ones(len(cache_bytes), bool))
        check_readers_fit(config.cache_limit, index_bytes, resident_bytes, cache_bytes,
                          config.ranks_per_node * config.readers_per_rank)


def simulate(streams: Sequence[SimStream | str], config: SimConfig | None = None, *,
             progress: bool | Progress = False, **settings: object) -> SimResult:
    """Predict a run of `streams` under `config` (fields may also be given as keywords).

    Args:
        streams: `SimStream`s, or dataset directories/URLs whose index.json is read.
        config: the world, order knobs, link, cache and step times (`SimConfig`).
        progress: True for a bar on stderr, or a callable taking the samples each simulated
            training step took (a large run takes minutes: 10^4 shards under a thrashing
            cache ran 26 s).
        settings: `SimConfig` fields overriding `config`'s.

    Raises:
        ValueError: an impossible setting (see `SimConfig`), weights or a world the planner
            refuses, a cache limit the dataset would refuse.
        SimulationError: the run cannot go on (a cache that cannot hold what a read needs).
    """
    started = time.perf_counter()
    config = replace(config or SimConfig(), **settings)  # type: ignore[arg-type]
    if not streams:
        raise ValueError("No stream to simulate.")
    sims = [s if isinstance(s, SimStream) else stream_of_dataset(s) for s in streams]
    fetch = np.concatenate([s.fetch_bytes for s in sims])
    meta = np.concatenate([s.meta_fetch_bytes for s in sims])
    resident = np.concatenate([s.resident_bytes for s in sims])
    most = np.concatenate([s.cache_bytes for s in sims])
    index_bytes = sum(s.index_bytes for s in sims)
    planned = plan_request(_request(sims, config, 0))
    _check(sims, config, planned.streams.epoch_size, index_bytes, most, resident)
    model = Model(config, fetch, resident, most, index_bytes,
                  int(sum(int(s.samples.sum()) for s in sims)), meta)
    offsets = planned.shard_offsets
    plans = {0: planned.ids}
    with make_progress(progress, planned.streams.epoch_size * config.epochs,
                       desc="simulating") as bar:
        model.on_step = bar
        try:
            reports = _run_epochs(model, sims, config, plans, offsets)
        finally:
            model.on_step = None
    end = model.clock.now
    total = int(sum(int(s.sum()) for s in model.step_samples))
    steps = np.concatenate(model.step_starts)
    return SimResult(
        config=config.to_json(), streams=[s.name for s in sims],
        samples_per_epoch=planned.streams.epoch_size, seconds=end,
        first_batch_seconds=model.first_batch[0], samples_per_second=_rate(total, end),
        stall_fraction=model.stall_seconds / end if end else 0.0, epochs=reports,
        timeline=timeline(end, steps, np.concatenate(model.step_samples),
                          [n.cache_times for n in model.nodes],
                          [n.cache_usage for n in model.nodes]),
        events=model.clock.events, wall_seconds=time.perf_counter() - started)


def _run_epochs(model: Model, sims: list[SimStream], config: SimConfig,
                plans: dict[int, np.ndarray], offsets: np.ndarray) -> list[EpochReport]:
    """Every epoch back to back, each planned as the dataset would plan it (the next one only
    when eviction looks past the current one's end)."""
    before = _counters(model)
    reports = []

    def later_rows(epoch: int, node: int) -> np.ndarray | None:
        """The next epoch's rows of `node`, for eviction's look-ahead; none after the last
        simulated epoch (nothing is known past the run; the shards the last epoch is done
        with then rank by recency among themselves)."""
        if epoch + 1 >= config.epochs:
            return None
        if epoch + 1 not in plans:
            plans[epoch + 1] = plan_request(_request(sims, config, epoch + 1)).ids
        node_plan = plans[epoch + 1][node]
        return node_plan.reshape(-1, node_plan.shape[-2] * node_plan.shape[-1])

    for epoch in range(config.epochs):
        if epoch not in plans:
            plans[epoch] = plan_request(_request(sims, config, epoch)).ids
        ids = plans.pop(epoch)
        begin = model.clock.now
        model.run_epoch(list(ids), offsets,
                        lambda node, e=epoch: later_rows(e, node))  # type: ignore[misc]
        del ids
        after = _counters(model)
        seconds = model.clock.now - begin
        samples = model.step_samples[-1].sum(axis=0)
        reports.append(EpochReport(epoch, seconds, model.first_batch[-1] - begin, [
            _node_report(model, n, int(samples[n]), after[n], before[n], seconds)
            for n in range(config.nodes)]))
        before = after
    return reports


def _node_report(model: Model, node: int, samples: int, after: tuple[int, ...],
                 before: tuple[int, ...], seconds: float) -> NodeReport:
    fetch_bytes, fetches, refetches, evictions, evicted = (a - b for a, b in zip(after, before))
    return NodeReport(node, samples, fetch_bytes, fetches, refetches, evictions, evicted,
                      peak_cache_bytes=model.nodes[node].cache.peak,
                      samples_per_second=_rate(samples, seconds))


def _rate(samples: int, seconds: float) -> float:
    """Samples per second; unbounded (inf) when the model spent no time on them (no link
    limit, latency, step or decode time was given)."""
    return samples / seconds if seconds else (math.inf if samples else 0.0)


def _counters(model: Model) -> list[tuple[int, ...]]:
    return [(n.fetch_bytes, n.fetches, n.cache.refetches, n.cache.evictions,
             n.cache.evicted_bytes) for n in model.nodes]
