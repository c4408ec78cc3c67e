"""Commands that look at a dataset: `inspect` (index only), `head` (first samples), `validate`
(every digest and sample).

Each command imports what it runs inside its function: `streaming --help` and every other command
then start without loading torch, Spark, Arrow or the storage SDKs they do not use.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from typing import Any

import click

from streaming.cli.output import (
    emit,
    fail,
    human_bytes,
    json_option,
    reason,
    summarise,
    to_json,
    unsafe_option,
)
from streaming.cli.source import DatasetSource, open_source
from streaming.errors import StreamingError
from streaming.format.index import ShardEntry

__all__ = ["head_command", "inspect_command", "validate_command"]

_split_option = click.option("--split", default=None, help="Split subdirectory of DATASET.")


def _load(dataset: str, split: str | None,
          allow_unsafe_types: bool = False) -> tuple[DatasetSource, list[dict[str, Any]]]:
    source = open_source(dataset, split, allow_unsafe_types)
    try:
        return source, source.read_index()
    except FileNotFoundError as err:
        fail(f"no index.json at {source.shown} ({err})")
    except (StreamingError, OSError, ValueError, ImportError) as err:
        # OSError: a server that cannot be reached or stalls, an index.json that is a folder.
        fail(f"cannot read the index of {source.shown}: {reason(err)}")
    raise AssertionError("unreachable")  # pragma: no cover


def _columns(entry: ShardEntry) -> dict[str, str]:
    config = entry.config
    if "column_names" in config:
        return dict(zip(config["column_names"], config.get("column_encodings") or []))
    return dict(config.get("columns") or {})


def describe(location: str, raw: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything the index says about a dataset, as plain data."""
    entries = [ShardEntry.from_json(obj, f"Shard {i}") for i, obj in enumerate(raw)]
    schemas = Counter(json.dumps(_columns(e)) for e in entries)
    zip_sizes = [e.zip_data.bytes + (e.zip_meta.bytes if e.zip_meta else 0)
                 for e in entries if e.zip_data]
    return {
        "dataset": location,
        "shards": len(entries),
        "samples": sum(e.samples for e in entries),
        "formats": sorted({e.format for e in entries}),
        "columns": json.loads(schemas.most_common(1)[0][0]) if schemas else {},
        "column_sets": len(schemas),
        "compression": sorted({e.compression or "none" for e in entries}),
        "hashes": sorted({h for e in entries for h in e.hashes}),
        "raw_bytes": sum(f.bytes for e in entries for f in (e.raw_data, e.raw_meta) if f),
        # Of the compressed shards (a merged index may join plain and compressed parts).
        "zip_bytes": sum(zip_sizes) if zip_sizes else None,
        "compressed_shards": len(zip_sizes),
        "shard_list": [{
            "raw_data": e.raw_data.basename, "samples": e.samples, "raw_bytes": e.raw_data.bytes,
            "zip_data": e.zip_data.basename if e.zip_data else None,
            "zip_bytes": e.zip_data.bytes if e.zip_data else None,
            "hashes": (e.zip_data or e.raw_data).hashes,
        } for e in entries],
    }


def _render_inspect(info: dict[str, Any], shards: bool) -> str:
    columns = ", ".join(f"{k}: {v}" for k, v in info["columns"].items()) or "-"
    if info["column_sets"] > 1:
        columns += f"  (most common of {info['column_sets']} column sets)"
    lines = [
        f"dataset      {info['dataset']}",
        f"format       {', '.join(info['formats']) or '-'}",
        f"shards       {info['shards']:,}",
        f"samples      {info['samples']:,}",
        f"columns      {columns}",
        f"compression  {', '.join(info['compression']) or '-'}",
        f"hashes       {', '.join(info['hashes']) or 'none'}",
        f"size         {human_bytes(info['raw_bytes'])} raw, "
        f"{human_bytes(info['zip_bytes'])} compressed" + (
            f" ({info['compressed_shards']:,} of {info['shards']:,} shards)"
            if 0 < info["compressed_shards"] < info["shards"] else ""),
    ]
    if shards:
        lines.append("")
        for shard in info["shard_list"]:
            digests = " ".join(f"{k}={v}" for k, v in shard["hashes"].items())
            lines.append(f"  {shard['zip_data'] or shard['raw_data']:<40} {shard['samples']:>9,} "
                         f"{human_bytes(shard['zip_bytes'] or shard['raw_bytes']):>10}  {digests}")
    return "\n".join(lines)


@click.command("inspect")
@click.argument("dataset")
@_split_option
@click.option("--shards", "show_shards", is_flag=True, help="List every shard with its digests.")
@json_option
def inspect_command(dataset: str, split: str | None, show_shards: bool, as_json: bool) -> None:
    """Describe DATASET (a local directory or URL) from its index.json alone: shards, samples,
    columns and encodings, compression, sizes, hashes."""
    source, raw = _load(dataset, split)
    try:
        info = describe(source.shown, raw)
    except ValueError as err:
        fail(f"malformed index at {source.shown}: {err}")
    emit(info, as_json, lambda data: _render_inspect(data, show_shards))


@click.command("head")
@click.argument("dataset")
@click.option("-n", "count", type=click.IntRange(min=0), default=5, show_default=True,
              help="Number of samples to print.")
@_split_option
@unsafe_option
@json_option
def head_command(dataset: str, count: int, split: str | None, allow_unsafe_types: bool,
                 as_json: bool) -> None:
    """Print the first samples of DATASET as JSON lines (bytes, big arrays and images are
    summarised). Remote datasets fetch only index.json and the shards needed."""
    source, raw = _load(dataset, split, allow_unsafe_types)
    samples: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="streaming-head-") as scratch:
        for obj in raw:
            if len(samples) >= count:
                break
            try:
                reader = source.reader(obj, scratch)
                for sample in reader.iter_range(0, count - len(samples)):
                    samples.append(summarise(sample))
                reader.close()
            except Exception as err:  # noqa: BLE001 - a shard that cannot be read is the answer
                fail(f"cannot read shard {obj.get('raw_data', {}).get('basename')}: "
                     f"{reason(err)}")
    if as_json:
        emit({"dataset": source.shown, "samples": samples}, True, str)
    else:
        for sample in samples:
            click.echo(to_json(sample))


def _render_validation(report: Any) -> str:
    lines = [str(problem) for problem in report.problems]
    lines += [f"{shard}: {count:,} more problem(s) not listed"
              for shard, count in report.unlisted.items()]
    if report.undecoded:
        lines.append(f"note: {', '.join(report.undecoded)} framed but not decoded (unpickling "
                     "runs code the data holds): pass --allow-unsafe-types to decode")
    verdict = "OK" if report.ok else f"{report.problem_count:,} problem(s)"
    lines.append(f"{verdict}: {report.shards:,} shards, {report.samples:,} samples decoded, "
                 f"{report.digests:,} digests checked, {human_bytes(report.bytes)} in "
                 f"{report.seconds:.2f} s ({human_bytes(report.bytes / max(report.seconds, 1e-9))}"
                 "/s)")
    return "\n".join(lines)


@click.command("validate")
@click.argument("dataset")
@_split_option
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes checking shards in parallel (default: CPU count).")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Show a progress bar on stderr.")
@unsafe_option
@json_option
def validate_command(dataset: str, split: str | None, workers: int | None, progress: bool,
                     allow_unsafe_types: bool, as_json: bool) -> None:
    """Check every file size and digest of DATASET and decode every sample, in parallel.

    Exits 1 if anything is wrong, naming the shard and the sample."""
    from streaming.cli.checks import validate_dataset
    from streaming.progress import make_progress

    source, raw = _load(dataset, split)
    # Only the bar's length: a malformed count is reported by the check itself, per shard.
    total = sum(obj["samples"] for obj in raw
                if isinstance(obj, dict) and type(obj.get("samples")) is int)
    with make_progress(progress and not as_json, total, desc="validate") as bar:
        report = validate_dataset(dataset, split, workers, bar, allow_unsafe_types)
    emit(report.to_json(), as_json, lambda _: _render_validation(report))
    if not report.ok:
        raise SystemExit(1)
