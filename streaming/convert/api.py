"""`convert(src, out)`: pick the converter for a source (by type, extension or folder layout).

Formats: ``parquet``, ``csv``, ``tsv``, ``jsonl``, ``hf`` (a `datasets.Dataset`, or a folder
written by ``save_to_disk``) and ``imagefolder`` (class-per-subfolder images). The command line's
``streaming convert`` is a thin wrapper over this function.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from streaming.convert.columns import ConversionError
from streaming.convert.hf import hf_to_mds
from streaming.convert.images import IMAGE_EXTENSIONS, imagefolder_to_mds
from streaming.convert.tabular import EXTENSIONS, csv_to_mds, jsonl_to_mds, parquet_to_mds
from streaming.errors import MissingDependencyError

__all__ = ["FORMATS", "convert", "detect_format"]

FORMATS = ("parquet", "csv", "tsv", "jsonl", "hf", "imagefolder")
_HF_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")


def _format_of_file(path: str) -> str | None:
    lower = path.lower()
    return next((kind for kind, exts in EXTENSIONS.items() if lower.endswith(exts)), None)


def detect_format(src: Any) -> str:
    """The format of a source: a dataset object, a file, a glob, or a folder.

    Raises:
        ConversionError: the source is ambiguous (several file formats) or unrecognised.
    """
    if not isinstance(src, (str, os.PathLike, list, tuple)):
        return "hf"
    paths = [os.fspath(p) for p in (src if isinstance(src, (list, tuple)) else [src])]
    if len(paths) == 1 and os.path.isdir(paths[0]):
        root = paths[0]
        if any(os.path.exists(os.path.join(root, marker)) for marker in _HF_MARKERS):
            return "hf"
        index = _dataset_index_in(root)
        if index is not None:
            raise ConversionError(
                f"{root} holds a streaming dataset already ({index}), not data to convert: "
                "read it with StreamingDataset (or `streaming head`), or point at the raw "
                "files. To convert other files in that folder anyway, choose the format with "
                "format=... (`--format`).")
        names = [n for _, _, files in os.walk(root) for n in files]
        kinds = {k for k in map(_format_of_file, names) if k}
        if len(kinds) > 1 and "jsonl" in kinds and not any(
                n.lower().endswith((".jsonl", ".ndjson")) for n in names):
            kinds.discard("jsonl")  # only `.json` files: metadata or an index beside the data
        if len(kinds) == 1:
            return kinds.pop()
        if kinds:
            raise ConversionError(f"{root} holds several formats ({', '.join(sorted(kinds))}); "
                                  "choose one with format=... (`--format` on the command line)")
        if _has_images(root):
            return "imagefolder"
        raise ConversionError(f"Cannot tell the format of {root}: no Parquet, CSV, TSV, "
                              "JSON-lines or class-per-folder images in it.")
    per_file = {_format_of_file(p) for p in paths}
    if len(per_file) == 1 and None not in per_file:
        return str(per_file.pop())
    raise ConversionError(f"Cannot tell the format of {src!r} from its extension; choose one "
                          f"of {', '.join(FORMATS)} with format=... (`--format`).")


def _dataset_index_in(root: str) -> str | None:
    """The first `index.json` under `root` that is a streaming dataset's (a `shards` list), if
    any: detection would take it for a JSON-lines file and convert the index as one sample."""
    for dirpath, _, names in os.walk(root):
        if "index.json" not in names:
            continue
        path = os.path.join(dirpath, "index.json")
        try:
            with open(path, "rb") as file:
                head = file.read(1 << 16)
        except OSError:
            continue
        if head.lstrip().startswith(b"{") and b'"shards"' in head:
            return path
    return None


def _has_images(root: str) -> bool:
    for entry in os.scandir(root):
        if entry.is_dir():
            for _, _, names in os.walk(entry.path):
                if any(n.lower().endswith(IMAGE_EXTENSIONS) for n in names):
                    return True
    return False


def _load_hf(src: Any) -> Any:
    if not isinstance(src, (str, os.PathLike)):
        return src
    try:
        from datasets import load_from_disk
    except ImportError as err:

        raise MissingDependencyError("Reading a saved Hugging Face dataset needs `datasets`: "
                                     "pip install datasets") from err
    return load_from_disk(os.fspath(src))


def convert(src: Any, out: Any, *, format: str | None = None,
            columns: dict[str, str] | None = None, include: Sequence[str] | None = None,
            num_workers: int | None = None, image_column: str = "x", label_column: str = "y",
            image_encoding: str | None = None, **options: Any) -> Any:
    """Convert `src` into an MDS dataset at `out` with the converter its format calls for.

    Args:
        src: file(s), a folder, a glob, or a dataset object (Hugging Face, Arrow, pandas).
        out: local dir, remote URL or ``(local, remote)``.
        format: one of `FORMATS`; detected when None.
        columns: encodings overriding the inferred ones (tables only).
        include: convert only these columns (tables only).
        num_workers: processes (default: CPU count; 0 or 1 for none).
        image_column: image folders: the image column's name.
        label_column: image folders: the label column's name.
        image_encoding: image folders: ``jpeg``, ``png`` or ``bytes`` (default: the files').
        **options: `run_tasks` options (progress, exist_ok, keep_local) and `MDSWriter` options
            (compression, hashes, size_limit).

    Returns:
        The converter's `ParallelResult` (a dict of them for a Hugging Face `DatasetDict`).
    """
    kind = format or detect_format(src)
    if kind not in FORMATS:
        raise ConversionError(f"Unknown format {kind!r}; choose one of {', '.join(FORMATS)}.")
    if kind == "imagefolder":
        if columns or include:
            raise ConversionError("Image folders have fixed columns; use image_column, "
                                  "label_column and image_encoding instead of columns/include.")
        return imagefolder_to_mds(os.fspath(src), out, image_column=image_column,
                                  label_column=label_column, image_encoding=image_encoding,
                                  num_workers=num_workers, **options)
    table_args = dict(columns=columns, include=include, num_workers=num_workers, **options)
    if kind == "hf":
        return hf_to_mds(_load_hf(src), out, **table_args)
    if kind == "parquet":
        return parquet_to_mds(src, out, **table_args)
    if kind == "jsonl":
        return jsonl_to_mds(src, out, **table_args)
    return csv_to_mds(src, out, delimiter="\t" if kind == "tsv" else ",", **table_args)
