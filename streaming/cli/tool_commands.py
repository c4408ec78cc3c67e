"""Debugging and maintenance commands: `bench` (read throughput), `doctor` (where a loader's
time goes, and what to change), `clean` (stale shared memory and temp files of dead processes).

Each command imports what it runs inside its function: `streaming --help` and every other command
then start without loading torch, Spark, Arrow or the storage SDKs they do not use.
"""

from __future__ import annotations

import logging
from typing import Any

import click

from streaming.cli.output import (
    BYTE_COUNT,
    emit,
    fail,
    human_bytes,
    json_option,
    reason,
    unsafe_option,
)

__all__ = ["bench_command", "clean_command", "doctor_command"]


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
@unsafe_option
@json_option
def bench_command(dataset: str, split: str | None, workers: int, limit: int | None,
                  allow_unsafe_types: bool, as_json: bool) -> None:
    """Measure how fast DATASET reads: samples/s, MB/s and time to the first sample (remote
    shards are fetched and decompressed as part of the measurement)."""
    from streaming.cli.benching import bench_read

    try:
        result = bench_read(dataset, split, workers, limit, allow_unsafe_types)
    except Exception as err:  # noqa: BLE001 - a shard that cannot be read is the answer
        fail(reason(err))
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
@click.option("--cache-limit", type=BYTE_COUNT, default=None,
              help="As StreamingDataset's, e.g. 10gb.")
@click.option("--cpus", type=click.IntRange(min=1), default=None,
              help="CPUs the loader may use (default: all this process may run on).")
@click.option("--plot", "plot_path", default=None, help="Also draw a timeline and per-stage "
              "bars into this image (needs matplotlib: pip install 'shardstream[plot]').")
@unsafe_option
@json_option
def doctor_command(dataset: str, local: str | None, split: str | None, workers: int,
                   batch_size: int, batches: int, shuffle: bool, predownload: int | None,
                   cache_limit: int | None, cpus: int | None, plot_path: str | None,
                   allow_unsafe_types: bool, as_json: bool) -> None:
    """Read a slice of an epoch of DATASET and say where the time goes: waiting for the
    network, decoding, too few workers, cache thrashing, shard sizes; with the settings to
    try."""
    from streaming.cli.doctor import plot_report, render_report, run_doctor
    from streaming.errors import UnsafeTypeError

    try:
        report = run_doctor(dataset, local=local, split=split, workers=workers,
                            batch_size=batch_size, batches=batches, shuffle=shuffle,
                            predownload=predownload, cache_limit=cache_limit, cpus=cpus,
                            allow_unsafe_types=allow_unsafe_types)
        if plot_path:
            plot_report(report, plot_path)
    except UnsafeTypeError as err:
        fail(f"{err} On the command line: --allow-unsafe-types.")
    except (OSError, ValueError, ImportError, RuntimeError) as err:
        fail(str(err))
    emit(report, as_json, render_report)


@click.command("clean")
@json_option
def clean_command(as_json: bool) -> None:
    """Remove shared memory, lock and temp files left on this machine by dead streaming jobs
    of this user (live jobs are never touched), and list what was removed."""
    from streaming.coord import cleanup

    quiet = logging.getLogger(cleanup.__name__)  # its warning repeats the list printed here
    level, quiet.level = quiet.level, logging.ERROR
    try:
        removed = sorted(cleanup.clean_stale_shared_memory())
    finally:
        quiet.setLevel(level)
    emit({"removed": removed}, as_json, lambda d: (
        f"Removed {len(removed)} stale object(s):\n" + "\n".join(f"  {r}" for r in removed)
        if removed else "Nothing stale to remove."))
