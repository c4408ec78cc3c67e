"""Commands that write datasets: `convert` (files, folders, saved Hugging Face datasets -> MDS)
and `merge-index` (one index over sub-datasets written in parallel).

Each command imports what it runs inside its function: `streaming --help` and every other command
then start without loading torch, Spark, Arrow or the storage SDKs they do not use.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

import click

from streaming.cli.output import BYTE_COUNT, emit, fail, json_option, reason

__all__ = ["convert_command", "index_command", "merge_index_command"]


def _parse_columns(ctx: click.Context, param: click.Parameter,
                   values: tuple[str, ...]) -> dict[str, str]:
    columns = {}
    for value in values:
        name, sep, encoding = value.partition("=")
        if not sep or not name or not encoding:
            raise click.BadParameter(f"expected NAME=ENCODING, got {value!r}", ctx, param)
        columns[name] = encoding
    if columns:
        from streaming.format.encodings import is_mds_encoding

        unknown = [f"{name}={enc}" for name, enc in columns.items() if not is_mds_encoding(enc)]
        if unknown:
            raise click.BadParameter(f"unknown MDS encoding(s): {', '.join(unknown)} (e.g. int, "
                                     "str, bytes, json, ndarray:uint16:1024).", ctx, param)
    return columns


def _shard_bytes(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    if value is None or value <= 0:
        raise click.BadParameter("a shard needs a positive size, such as 64mb", ctx, param)
    return value


def _split_list(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise click.BadParameter("expected a comma-separated list", ctx, param)
    return items


def _check_compression(ctx: click.Context, param: click.Parameter,
                       value: str | None) -> str | None:
    """A bad name is a usage error before any work starts, not a failed task."""
    from streaming.format.compression import get_compressions, is_compression

    if value is not None and not is_compression(value):
        names = ", ".join(sorted(c for c in get_compressions() if ":" not in c))
        raise click.BadParameter(f"{value!r} is not a compression; choose one of {names} "
                                 "(with a level: zstd:7).", ctx, param)
    return value


def _check_hashes(ctx: click.Context, param: click.Parameter,
                  value: str | None) -> list[str] | None:
    """The digests, checked and in the sorted, distinct order the index records them in."""
    from streaming.hashing import get_hashes, is_hash

    items = _split_list(ctx, param, value)
    if items is None:
        return None
    unknown = [item for item in items if not is_hash(item)]
    if unknown:
        raise click.BadParameter(f"unknown digest(s) {unknown}; choose from "
                                 f"{', '.join(sorted(get_hashes()))}.", ctx, param)
    return sorted(set(items))


def _out_arg(out: str, local: str | None) -> Any:
    return (local, out) if local else out


def _render_convert(data: dict[str, Any]) -> str:
    where = data["remote"] or data["local"]
    count = len(data["partitions"])
    parts = f" in {count} sub-dataset{'s' * (count != 1)}" if count else ""
    text = f"Wrote {data['samples']:,} sample{'s' * (data['samples'] != 1)}{parts} to {where}"
    if data.get("classes"):
        text += f"\nclasses ({len(data['classes'])}): {', '.join(data['classes'][:20])}"
    return text


@click.command("convert")
@click.argument("src", nargs=-1, required=True)
@click.argument("out")
@click.option("--format", "fmt", type=click.Choice(
    ["auto", "parquet", "csv", "tsv", "jsonl", "hf", "imagefolder"]), default="auto",
    show_default=True, help="Input format (auto: from extensions or folder layout).")
@click.option("--column", "columns", multiple=True, callback=_parse_columns,
              metavar="NAME=ENCODING", help="Override a column's MDS encoding (repeatable).")
@click.option("--include", callback=_split_list, metavar="A,B,...",
              help="Convert only these columns.")
@click.option("--workers", type=click.IntRange(min=0), default=None,
              help="Processes (default: CPU count; 0 converts in this process).")
@click.option("--compression", default=None, callback=_check_compression,
              help="Shard compression, e.g. zstd or zstd:7.")
@click.option("--hashes", callback=_check_hashes, metavar="ALGO,...",
              help="Digests to record, e.g. sha1,xxh64.")
@click.option("--size-limit", type=BYTE_COUNT, default="64mb", show_default=True,
              help="Shard size limit (none: one shard).")
@click.option("--local", default=None, help="Local working directory when OUT is remote.")
@click.option("--keep-local", is_flag=True, help="Keep local files after uploading.")
@click.option("--exist-ok", is_flag=True, help="Clear a non-empty local output directory, "
              "or replace a dataset at a remote OUT.")
@click.option("--image-column", default="x", show_default=True, help="Image folders: column.")
@click.option("--label-column", default="y", show_default=True, help="Image folders: column.")
@click.option("--image-encoding", type=click.Choice(["jpeg", "png", "bytes"]), default=None,
              help="Image folders: encoding (default: the format most files have; others "
              "are re-encoded; bytes stores every file as it is).")
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option
def convert_command(src: tuple[str, ...], out: str, fmt: str, columns: dict[str, str],
                    include: list[str] | None, workers: int | None, compression: str | None,
                    hashes: list[str] | None, size_limit: int | None, local: str | None,
                    keep_local: bool, exist_ok: bool, image_column: str, label_column: str,
                    image_encoding: str | None, progress: bool, as_json: bool) -> None:
    """Convert SRC (files, a folder, a glob, a saved Hugging Face dataset, or an image folder
    with one subfolder per class) into an MDS dataset at OUT (a directory or URL)."""
    from streaming.convert.api import convert
    from streaming.convert.columns import ConversionError

    options: dict[str, Any] = dict(
        compression=compression, hashes=hashes, size_limit=size_limit, keep_local=keep_local,
        exist_ok=exist_ok, progress=progress and not as_json, image_column=image_column,
        label_column=label_column, image_encoding=image_encoding)
    from streaming.errors import StreamingError

    if os.path.isfile(out):
        fail(f"OUT {out!r} is a file, not a directory: the last argument is where the dataset "
             f"goes (was it left out?).")
    source: Any = list(src) if len(src) > 1 else src[0]
    try:
        result = convert(source, _out_arg(out, local), format=None if fmt == "auto" else fmt,
                         columns=columns or None, include=include, num_workers=workers,
                         **options)
    except TypeError as err:
        raise click.UsageError(str(err)) from err
    except (ConversionError, StreamingError, OSError, ImportError, ValueError) as err:
        # (ValueError: an OUT no store takes, "foo://", or a read-only one, "http://")
        hint = " (--exist-ok clears it)" if str(err).startswith("Directory is not empty") else ""
        fail(reason(err) + hint)
    results = result if isinstance(result, dict) else {"": result}
    data = {split: {"local": r.local, "remote": r.remote, "samples": r.samples,
                    "partitions": r.partitions, **r.details} for split, r in results.items()}
    emit(data.get("", data), as_json,
         lambda d: "\n".join(_render_convert(v) for v in data.values()))


def _render_merge(report: Any) -> str:
    lines = [f"skipped {name}: {why}" for name, why in report.skipped.items()]
    if report.retired:
        lines.append(f"ignored (marked by a replaced or failed write_parallel run): "
                     f"{', '.join(report.retired)}")
    where = report.remote_index or report.index_path or "-"
    lines.append(f"Merged {len(report.partitions)} sub-datasets ({report.shards:,} shards, "
                 f"{report.samples:,} samples) into {where}")
    return "\n".join(lines)


@click.command("merge-index")
@click.argument("root")
@click.option("--remote", default=None, help="Remote copy of ROOT; the merged index is "
              "uploaded there (sub-datasets missing locally are read from it).")
@click.option("--no-keep-local", "drop_local", is_flag=True,
              help="With --remote, delete ROOT afterwards (as merge_index(keep_local=False)).")
@click.option("--strict", is_flag=True, help="Exit 1 if any sub-dataset had to be skipped.")
@json_option
def merge_index_command(root: str, remote: str | None, drop_local: bool, strict: bool,
                        as_json: bool) -> None:
    """Merge the index.json of every sub-dataset under ROOT into ROOT/index.json.

    Safe to re-run; sub-datasets without an index or with missing shard files are skipped
    with a warning."""
    from streaming.merge import merge_root

    if drop_local and not remote:
        raise click.UsageError("--no-keep-local needs --remote (else the merge would be lost).")
    merge_log = logging.getLogger("streaming.merge")
    level = merge_log.level
    merge_log.setLevel(logging.ERROR)  # the report says what the library's warnings say
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the report lists what was skipped
            report = merge_root(_out_arg(remote, root) if remote else root,
                                keep_local=not drop_local, strict=strict)
    except (OSError, ValueError, RuntimeError) as err:
        fail(str(err))
    finally:
        merge_log.setLevel(level)
    if not report.partitions:
        for name, why in report.skipped.items() if not as_json else ():
            click.echo(f"skipped {name}: {why}", err=True)
        fail(f"no complete sub-dataset with an index.json under {root}",
             details={"merged": 0, "skipped": report.skipped})
    emit({"index": report.index_path, "remote_index": report.remote_index,
          "partitions": report.partitions, "shards": report.shards, "samples": report.samples,
          "skipped": report.skipped, "retired": report.retired}, as_json,
         lambda _: _render_merge(report))
    if strict and report.skipped:
        raise SystemExit(1)


@click.command("index")
@click.argument("folder")
@click.option("--out", default=None, metavar="DIR_OR_URL",
              help="Write index.json here instead of into FOLDER (for a folder you cannot "
                   "write to, such as a Hugging Face dataset: give the stream's local cache).")
@click.option("--split", default=None,
              help="Only the files of this split, in a Hugging Face Hub layout.")
@click.option("--shard-size", "shard_size", type=BYTE_COUNT, default="64mb", show_default=True,
              callback=_shard_bytes, help="Target compressed bytes per shard (whole row groups).")
@click.option("--workers", type=click.IntRange(min=1), default=32, show_default=True,
              help="Footers read at once.")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar.")
@json_option
def index_command(folder: str, out: str | None, split: str | None, shard_size: int,
                  workers: int, progress: bool, as_json: bool) -> None:
    """Index the Parquet files under FOLDER (a path or URL) to stream them in place.

    Reads only each file's footer; afterwards StreamingDataset(remote=FOLDER, local=...)
    reads the files like an MDS dataset, with Stream(columns=[...]) fetching only the
    columns asked for. Run it again after the files change."""
    from streaming.convert.parquet_index import index_parquet

    try:
        result = index_parquet(folder, out=out, split=split, shard_bytes=shard_size,
                               workers=workers, progress=progress and not as_json)
    except (OSError, ValueError) as err:
        fail(str(err))
    data = {"index": result.index, "files": result.files, "shards": result.shards,
            "rows": result.rows, "bytes": result.bytes, "empty": list(result.empty),
            "seconds": round(result.seconds, 3)}
    emit(data, as_json, lambda d: (
        f"Indexed {d['files']:,} Parquet file(s): {d['rows']:,} rows in {d['shards']:,} "
        f"shard(s), {d['bytes']:,} bytes, in {d['seconds']} s -> {d['index']}"
        + (f"\nLeft out {len(d['empty'])} file(s) without rows." if d["empty"] else "")))
