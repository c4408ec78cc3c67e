"""Debugging and maintenance commands: `bench` (read throughput), `doctor` (where a loader's
time goes, and what to change), `plan` (who reads which samples), `clean` (stale shared memory
and temp files of dead processes).

Each command imports what it runs inside its function: `streaming --help` and every other command
then start without loading torch, Spark, Arrow or the storage SDKs they do not use.
"""

from __future__ import annotations

from typing import Any

import click

from streaming.cli.output import emit, fail, human_bytes, json_option

__all__ = ["bench_command", "clean_command", "doctor_command", "plan_command"]


def _render_bench(data: dict[str, Any]) -> str:
    return (f"{data['samples']:,} samples, {human_bytes(data['bytes'])} in "
            f"{data['seconds']:.2f} s with {data['workers']} worker(s)\n"
            f"throughput   {data['samples_per_s']:,.0f} samples/s, "
            f"{human_bytes(data['bytes_per_s'])}/s\n"
            f"first sample {data['first_sample_ms']:.1f} ms (index, first shard, decode)")


@click.command("bench")
@click.argument("dataset")
@click.option("--split", default=None, help="Split subdirectory of DATASET.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Reader processes (each reads every n-th shard).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Stop after about this many samples.")
@json_option
def bench_command(dataset: str, split: str | None, workers: int, limit: int | None,
                  as_json: bool) -> None:
    """Measure how fast DATASET reads: samples/s, MB/s and time to the first sample (remote
    shards are fetched and decompressed as part of the measurement)."""
    from streaming.cli.benching import bench_read

    try:
        result = bench_read(dataset, split, workers, limit)
    except (OSError, ValueError) as err:
        fail(str(err))
    emit(result, as_json, _render_bench)


@click.command("doctor")
@click.argument("dataset")
@click.option("--local", default=None, help="Cache directory for a remote DATASET (default: a "
              "temporary one, removed afterwards). A local DATASET is read in place.")
@click.option("--split", default=None, help="Split subdirectory of DATASET.")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="DataLoader workers.")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--batches", type=click.IntRange(min=1), default=200, show_default=True,
              help="How many batches the slice reads.")
@click.option("--shuffle/--no-shuffle", default=False, show_default=True)
@click.option("--predownload", type=click.IntRange(min=1), default=None)
@click.option("--cache-limit", default=None, help="As StreamingDataset's, e.g. 10gb.")
@click.option("--cpus", type=click.IntRange(min=1), default=None,
              help="CPUs the loader may use (default: all this process may run on).")
@click.option("--plot", "plot_path", default=None, help="Also draw a timeline and per-stage "
              "bars into this image (needs matplotlib: pip install 'shardstream[plot]').")
@json_option
def doctor_command(dataset: str, local: str | None, split: str | None, workers: int,
                   batch_size: int, batches: int, shuffle: bool, predownload: int | None,
                   cache_limit: str | None, cpus: int | None, plot_path: str | None,
                   as_json: bool) -> None:
    """Read a slice of an epoch of DATASET and say where the time goes: waiting for the
    network, decoding, too few workers, cache thrashing, shard sizes; with the settings to
    try."""
    from streaming.cli.doctor import plot_report, render_report, run_doctor

    try:
        report = run_doctor(dataset, local=local, split=split, workers=workers,
                            batch_size=batch_size, batches=batches, shuffle=shuffle,
                            predownload=predownload, cache_limit=cache_limit, cpus=cpus)
        if plot_path:
            plot_report(report, plot_path)
    except (OSError, ValueError, ImportError, RuntimeError) as err:
        fail(str(err))
    emit(report, as_json, render_report)


def _parse_sizes(sizes: str) -> list[int]:
    try:
        values = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError as err:
        raise click.BadParameter(f"expected integers, got {sizes!r}",
                                 param_hint="--shard-sizes") from err
    if not values or min(values) < 0:
        raise click.BadParameter("expected non-negative integers", param_hint="--shard-sizes")
    return values


def _stream_shard_sizes(datasets: tuple[str, ...], split: str | None,
                        sizes: tuple[str, ...]) -> list[list[int]]:
    """Samples per shard of each stream: DATASETs' indexes, then each --shard-sizes."""
    if not datasets and not sizes:
        raise click.UsageError("Give at least one DATASET or --shard-sizes.")
    from streaming.cli.source import open_source

    streams = []
    for dataset in datasets:
        try:
            streams.append([int(obj["samples"]) for obj in
                            open_source(dataset, split).read_index()])
        except (OSError, ValueError, KeyError) as err:
            fail(f"cannot read the index of {dataset}: {err}")
    return streams + [_parse_sizes(value) for value in sizes]


def _per_stream(values: str | None, cast: Any, count: int, option: str) -> list[Any]:
    """A comma list with one value per stream (`-` for none), or all None."""
    if values is None:
        return [None] * count
    parts = [part.strip() for part in values.split(",")]
    if len(parts) != count:
        raise click.BadParameter(f"expected {count} value(s), one per stream, got {len(parts)}",
                                 param_hint=option)
    try:
        return [None if part in ("", "-") else cast(part) for part in parts]
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint=option) from err


def _render_plan(data: dict[str, Any]) -> str:
    lines = [(f"epoch {data['epoch']}, sample_in_epoch {data['sample_in_epoch']}, "
              f"{data['num_samples']:,} samples, canonical nodes {data['num_canonical_nodes']}, "
              f"shuffle {data['shuffle_algo'] if data['shuffle'] else 'off'}")]
    several = len(data["stream_chooses"]) > 1
    if several:
        lines.append(f"{data['batching_method']} batching; samples per stream this epoch: "
                     + ", ".join(map(str, data["stream_chooses"])) + " (ids shown as id:stream)")
    for entry in data["workers"]:
        ids = " ".join(f"{i}:{s}" if several else str(i)
                       for i, s in zip(entry["ids"], entry["streams"]))
        lines.append(f"rank {entry['rank']} (node {entry['node']}) worker {entry['worker']}: "
                     f"{ids}")
    return "\n".join(lines)


@click.command("plan")
@click.argument("datasets", metavar="[DATASET]...", nargs=-1)
@click.option("--split", default=None, help="Split subdirectory of each DATASET.")
@click.option("--shard-sizes", multiple=True, metavar="N,N,...",
              help="Samples per shard of one more stream (repeatable), instead of an index.")
@click.option("--proportion", "proportions", default=None, metavar="P,P,...",
              help="Each stream's `proportion` (relative weight), one per stream.")
@click.option("--repeat", "repeats", default=None, metavar="R,R,...",
              help="Each stream's `repeat`, one per stream (`-` for none).")
@click.option("--choose", "chooses", default=None, metavar="C,C,...",
              help="Each stream's `choose`, one per stream (`-` for none).")
@click.option("--epoch-size", type=click.IntRange(min=1), default=None,
              help="Samples per epoch, all streams (with proportions or no weights).")
@click.option("--batching-method", default="random", show_default=True,
              type=click.Choice(["random", "stratified", "per_stream", "device_per_stream"]))
@click.option("--sampling-method", default="balanced", show_default=True,
              type=click.Choice(["balanced", "fixed"]))
@click.option("--sampling-granularity", type=click.IntRange(min=1), default=1,
              show_default=True)
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--ranks-per-node", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="DataLoader workers per rank.")
@click.option("--batch-size", type=click.IntRange(min=1), required=True,
              help="Per-device batch size (as given to StreamingDataset).")
@click.option("--epoch", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--sample-in-epoch", type=click.IntRange(min=0), default=0, show_default=True,
              help="Samples already seen this epoch (resumption).")
@click.option("--shuffle/--no-shuffle", default=False, show_default=True)
@click.option("--shuffle-algo", default="py1e", show_default=True)
@click.option("--shuffle-seed", type=click.IntRange(min=0), default=9176, show_default=True)
@click.option("--shuffle-block-size", type=click.IntRange(min=1), default=None)
@click.option("--num-canonical-nodes", type=click.IntRange(min=1), default=None)
@click.option("--partition-algo", default="relaxed", show_default=True)
@click.option("--initial-nodes", type=click.IntRange(min=1), default=None,
              help="Physical nodes of the run being resumed, if different.")
@click.option("-k", "first", type=click.IntRange(min=0), default=10, show_default=True,
              help="Sample ids to show per worker.")
@json_option
def plan_command(datasets: tuple[str, ...], split: str | None, shard_sizes: tuple[str, ...],
                 proportions: str | None, repeats: str | None, chooses: str | None,
                 epoch_size: int | None, batching_method: str, sampling_method: str,
                 sampling_granularity: int, nodes: int, ranks_per_node: int, workers: int,
                 batch_size: int, epoch: int, sample_in_epoch: int, shuffle: bool,
                 shuffle_algo: str, shuffle_seed: int, shuffle_block_size: int | None,
                 num_canonical_nodes: int | None, partition_algo: str,
                 initial_nodes: int | None, first: int, as_json: bool) -> None:
    """Show the first sample ids every rank and worker will read, for one or more streams
    (DATASETs, or --shard-sizes) and a world: the same planner and defaults as
    StreamingDataset, for debugging determinism, mixing and resumption."""
    from streaming.cli.planning import PlanRequest, StreamSpec, plan_first_ids

    sizes = _stream_shard_sizes(datasets, split, shard_sizes)
    weights = zip(_per_stream(proportions, float, len(sizes), "--proportion"),
                  _per_stream(repeats, float, len(sizes), "--repeat"),
                  _per_stream(chooses, int, len(sizes), "--choose"))
    request = PlanRequest(
        streams=[StreamSpec(stream, *weight) for stream, weight in zip(sizes, weights)],
        nodes=nodes, ranks_per_node=ranks_per_node, workers=workers, batch_size=batch_size,
        epoch=epoch, sample_in_epoch=sample_in_epoch, shuffle=shuffle, shuffle_algo=shuffle_algo,
        shuffle_seed=shuffle_seed, shuffle_block_size=shuffle_block_size,
        num_canonical_nodes=num_canonical_nodes, partition_algo=partition_algo,
        initial_nodes=initial_nodes, batching_method=batching_method, epoch_size=epoch_size,
        sampling_method=sampling_method, sampling_granularity=sampling_granularity)
    try:
        data = plan_first_ids(request, first)
    except KeyError as err:
        raise click.BadParameter(f"unknown algorithm {err}") from err
    except (ValueError, RuntimeError) as err:
        fail(str(err))
    emit(data, as_json, _render_plan)


@click.command("clean")
@json_option
def clean_command(as_json: bool) -> None:
    """Remove shared memory, lock and temp files left on this machine by dead streaming jobs
    of this user (live jobs are never touched), and list what was removed."""
    from streaming.coord.cleanup import clean_stale_shared_memory

    removed = sorted(clean_stale_shared_memory())
    emit({"removed": removed}, as_json, lambda d: (
        f"Removed {len(removed)} stale object(s):\n" + "\n".join(f"  {r}" for r in removed)
        if removed else "Nothing stale to remove."))
