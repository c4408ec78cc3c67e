"""Commands over the planner, no dataset opened: `plan` (who reads which samples) and `simulate`
(how fast a run would go, what it would download, how its cache would fare).

Both take the streams (DATASETs' index.json, or made-up shards) and the order knobs with
`StreamingDataset`'s names, declared once here (`order_options`), and go through the planner's
one way in (`streaming.order.request`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import click

from streaming.cli.output import BYTE_COUNT, emit, fail, json_option

__all__ = ["plan_command", "simulate_command"]

_ORDER_OPTIONS = [
    click.option("--proportion", "proportions", default=None, metavar="P,P,...",
                 help="Each stream's `proportion` (relative weight), one per stream."),
    click.option("--repeat", "repeats", default=None, metavar="R,R,...",
                 help="Each stream's `repeat`, one per stream (`-` for none)."),
    click.option("--choose", "chooses", default=None, metavar="C,C,...",
                 help="Each stream's `choose`, one per stream (`-` for none)."),
    click.option("--epoch-size", type=click.IntRange(min=1), default=None,
                 help="Samples per epoch, all streams (with proportions or no weights)."),
    click.option("--batching-method", default="random", show_default=True,
                 type=click.Choice(["random", "stratified", "per_stream", "device_per_stream"])),
    click.option("--sampling-method", default="balanced", show_default=True,
                 type=click.Choice(["balanced", "fixed"])),
    click.option("--sampling-granularity", type=click.IntRange(min=1), default=1,
                 show_default=True),
    click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True),
    click.option("--ranks-per-node", type=click.IntRange(min=1), default=1, show_default=True),
    click.option("--batch-size", type=click.IntRange(min=1), required=True,
                 help="Per-device batch size (as given to StreamingDataset)."),
    click.option("--shuffle/--no-shuffle", default=False, show_default=True),
    click.option("--shuffle-algo", default="py1e", show_default=True),
    click.option("--shuffle-seed", type=click.IntRange(min=0), default=9176, show_default=True),
    click.option("--shuffle-block-size", type=click.IntRange(min=1), default=None),
    click.option("--num-canonical-nodes", type=click.IntRange(min=1), default=None),
    click.option("--partition-algo", default="relaxed", show_default=True),
]


def order_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the streams' weights and the order knobs shared by `plan` and `simulate` (their
    names are `PlanRequest`'s and `SimConfig`'s fields)."""
    for option in reversed(_ORDER_OPTIONS):
        func = option(func)
    return func


def _weights(count: int, proportions: str | None, repeats: str | None,
             chooses: str | None) -> list[dict[str, Any]]:
    """Per stream, its `proportion`/`repeat`/`choose` keywords from the comma lists."""
    columns = zip(_per_stream(proportions, float, count, "--proportion"),
                  _per_stream(repeats, float, count, "--repeat"),
                  _per_stream(chooses, int, count, "--choose"))
    return [{"proportion": p, "repeat": r, "choose": c} for p, r, c in columns]


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
        source = open_source(dataset, split)
        try:
            streams.append([int(obj["samples"]) for obj in source.read_index()])
        except (OSError, ValueError, KeyError) as err:
            fail(f"cannot read the index of {source.shown}: {err}")
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
@order_options
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="DataLoader workers per rank.")
@click.option("--epoch", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--sample-in-epoch", type=click.IntRange(min=0), default=0, show_default=True,
              help="Samples already seen this epoch (resumption).")
@click.option("--initial-nodes", type=click.IntRange(min=1), default=None,
              help="Physical nodes of the run being resumed, if different.")
@click.option("-k", "first", type=click.IntRange(min=0), default=10, show_default=True,
              help="Sample ids to show per worker.")
@json_option
def plan_command(datasets: tuple[str, ...], split: str | None, shard_sizes: tuple[str, ...],
                 proportions: str | None, repeats: str | None, chooses: str | None,
                 workers: int, epoch: int, sample_in_epoch: int, initial_nodes: int | None,
                 first: int, as_json: bool, **order: Any) -> None:
    """Show the first sample ids every rank and worker will read, for one or more streams
    (DATASETs, or --shard-sizes) and a world: the same planner and defaults as
    StreamingDataset, for debugging determinism, mixing and resumption."""
    from streaming.cli.planning import PlanRequest, StreamSpec, plan_first_ids
    from streaming.order.plan import OrderOptions

    sizes = _stream_shard_sizes(datasets, split, shard_sizes)
    names = list(datasets) + [f"--shard-sizes {value}" for value in shard_sizes]
    weights = _weights(len(sizes), proportions, repeats, chooses)
    nodes, ranks_per_node = order.pop("nodes"), order.pop("ranks_per_node")
    try:
        request = PlanRequest(
            streams=[StreamSpec(stream, **weight, name=name)
                     for stream, weight, name in zip(sizes, weights, names)],
            options=OrderOptions(**order), nodes=nodes, ranks_per_node=ranks_per_node,
            workers=workers, epoch=epoch, sample_in_epoch=sample_in_epoch,
            initial_nodes=initial_nodes)
        data = plan_first_ids(request, first)
    except KeyError as err:
        raise click.BadParameter(_unknown(err)) from err
    except (ValueError, RuntimeError) as err:
        fail(str(err))
    except MemoryError as err:
        fail(f"the epoch is too large to plan in this machine's memory ({err})")
    emit(data, as_json, _render_plan)


def _seconds(text: str | None, option: str) -> float | None:
    """`2ms`, `0.5s`, `300us` or a plain number of seconds."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(us|ms|s)?\s*", text)
    try:
        value = float(match.group(1)) if match else float("nan")
    except ValueError:
        value = float("nan")
    if value != value:
        raise click.BadParameter(f"expected seconds such as 0.02, 20ms or 300us, got {text!r}",
                                 param_hint=option)
    return value * {"us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0}[match.group(2)]  # type: ignore[union-attr]


def _synthetic(spec: str) -> dict[str, int]:
    parts = spec.split(",")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    if len(values) not in (3, 4):
        raise click.BadParameter(f"expected SHARDS,SAMPLES,BYTES[,COMPRESSED], got {spec!r}",
                                 param_hint="--synthetic")
    keys = ("shards", "samples_per_shard", "shard_bytes", "compressed_bytes")
    return dict(zip(keys, values))


@click.command("simulate")
@click.argument("datasets", metavar="[DATASET]...", nargs=-1)
@click.option("--split", default=None, help="Split subdirectory of each DATASET.")
@click.option("--synthetic", multiple=True, metavar="SHARDS,SAMPLES,BYTES[,COMPRESSED]",
              help="One more stream of equal made-up shards (repeatable): shard count, samples "
              "per shard, bytes per shard, and compressed bytes if compressed.")
@order_options
@click.option("--workers", type=click.IntRange(min=0), default=8, show_default=True,
              help="DataLoader workers per rank (0: read in the main process).")
@click.option("--predownload", type=click.IntRange(min=0), default=None,
              help="Samples each worker prepares ahead (default: 8 batches).")
@click.option("--cache-limit", type=BYTE_COUNT, default=None,
              help="Node cache limit, e.g. 20gb (default: none).")
@click.option("--bandwidth", type=BYTE_COUNT, default=None,
              help="Each node's link in bytes per second, e.g. 500mb (default: unlimited).")
@click.option("--latency", default="0", show_default=True,
              help="Time to a fetch's first byte, e.g. 20ms.")
@click.option("--step-time", default="0", show_default=True,
              help="The training step's time per sample of a device batch, e.g. 2ms.")
@click.option("--decode-time", default="0", show_default=True,
              help="A worker's time to read and collate one sample, e.g. 20us.")
@click.option("--startup", default="0", show_default=True,
              help="Time from each epoch's start until its workers read (worker start-up, "
              "charged every epoch), e.g. 2s.")
@click.option("--prefetch-factor", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--plot", "plot_path", default=None, help="Also draw throughput and cache use "
              "over time into this image (needs matplotlib: pip install 'shardstream[plot]').")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Show a progress bar of the simulated samples (not with --json).")
@json_option
def simulate_command(datasets: tuple[str, ...], split: str | None, synthetic: tuple[str, ...],
                     proportions: str | None, repeats: str | None, chooses: str | None,
                     workers: int, predownload: int | None, cache_limit: int | None,
                     bandwidth: int | None, latency: str, step_time: str, decode_time: str,
                     startup: str, prefetch_factor: int, epochs: int, plot_path: str | None,
                     progress: bool, as_json: bool, **order: Any) -> None:
    """Predict a training run before launching it: throughput over time, time to first batch,
    bytes each node downloads per epoch, cache use and evictions. Uses the real planner (the
    exact sample order) and a discrete-event model of every node's link, cache, workers and
    the training step. Reads only index files."""
    if not datasets and not synthetic:
        raise click.UsageError("Give at least one DATASET or --synthetic.")
    from streaming.simulate import SimConfig, SimStream, simulate, stream_of_dataset

    weights = _weights(len(datasets) + len(synthetic), proportions, repeats, chooses)
    if plot_path and not os.path.isdir(os.path.dirname(os.path.abspath(plot_path))):
        # Before the run, which may take minutes: its results would be lost with the plot.
        raise click.BadParameter(f"{plot_path!r}: its folder does not exist.",
                                 param_hint="--plot")
    try:
        config = SimConfig(
            workers=workers, predownload=predownload,
            cache_limit=cache_limit, bandwidth=bandwidth,
            latency=_seconds(latency, "--latency"),  # type: ignore[arg-type]
            step_seconds_per_sample=_seconds(step_time, "--step-time"),  # type: ignore[arg-type]
            decode_seconds_per_sample=_seconds(decode_time, "--decode-time"),  # type: ignore[arg-type]
            startup_seconds=_seconds(startup, "--startup"),  # type: ignore[arg-type]
            prefetch_factor=prefetch_factor, epochs=epochs, **order)
        streams = [stream_of_dataset(d, split, **w) for d, w in zip(datasets, weights)]
        streams += [SimStream.synthetic(**_synthetic(spec), **w)
                    for spec, w in zip(synthetic, weights[len(datasets):])]
        result = simulate(streams, config, progress=progress and not as_json)
        if plot_path:
            result.plot(plot_path)
    except KeyError as err:
        raise click.BadParameter(_unknown(err)) from err
    except (OSError, ValueError, RuntimeError, ImportError) as err:
        fail(str(err))
    except OverflowError as err:
        fail(f"the sizes given add up to more than 64-bit counters hold (8 EiB): {err}")
    except MemoryError as err:
        fail(f"the epoch is too large to simulate in this machine's memory ({err})")
    emit(result.to_json(), as_json, lambda _: result.render())


def _unknown(err: KeyError) -> str:
    """An unknown algorithm's message: the planner's own text (which names it and the known
    ones), not `str(KeyError)`, which would quote it a second time."""
    said = str(err.args[0]) if err.args else ""
    return said if said.lower().startswith("unknown") else f"unknown algorithm {said!r}"
