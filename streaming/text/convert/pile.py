"""The Pile to MDS: ``python -m streaming.text.convert.pile --in_root RAW --out_root OUT``.

Input: ``RAW/train/*.jsonl``, ``RAW/val.jsonl`` and ``RAW/test.jsonl``, each line
``{"text": ..., "meta": {"pile_set_name": ...}}``. As an extension, the files may also be the
distributed ``.jsonl.zst`` (read as a stream with the `zstandard` package, or the ``zstd``
command when that package is missing). Output: ``OUT/train`` (all training files' shards, merged
into one flat folder with one index), ``OUT/val`` and ``OUT/test``, with columns `text` and
`pile_set_name`, which `StreamingPile` reads. Files are converted in parallel, one process per
file; for each, a JSON line with its per-subset sample counts is printed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from argparse import ArgumentParser, Namespace
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from glob import glob
from multiprocessing import Pool
from typing import IO, Any

from streaming.errors import MissingDependencyError
from streaming.format.index import get_index_basename
from streaming.format.mds.writer import MDSWriter
from streaming.progress import make_progress
from streaming.storage.urls import scheme_of
from streaming.units import get_list_arg
from streaming.vision.convert._common import add_writer_flags, writer_compression

__all__ = ["COLUMNS", "Task", "convert_pile", "each_task", "file_to_dir", "find_inputs", "main",
           "merge_shard_groups", "open_jsonl", "parse_args", "with_id"]

COLUMNS = {"text": "str", "pile_set_name": "str"}
_SUFFIXES = (".jsonl.zst", ".jsonl")
Task = tuple[str, str, str, list[str], int]
"""``(input file, output dir, compression, hashes, size limit)``: one file's conversion."""


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Convert the Pile (JSON lines) to MDS.")
    add_writer_flags(parser, compression="zstd:16", size_limit=1 << 27, progress=False)
    return parser.parse_args(argv)


def _stem(path: str) -> str:
    """The path without its ``.jsonl`` / ``.jsonl.zst`` suffix."""
    return next(path[:-len(s)] for s in _SUFFIXES if path.endswith(s))


def find_inputs(in_root: str) -> list[str]:
    """The training files (sorted), then val, then test; each ``.jsonl`` or ``.jsonl.zst``.

    Raises:
        FileNotFoundError: no training file, or no val / test file.
        ValueError: one file is there both compressed and not (which one is meant?).
    """
    trains = sorted(glob(os.path.join(in_root, "train", "*.jsonl")) +
                    glob(os.path.join(in_root, "train", "*.jsonl.zst")))
    if not trains:
        raise FileNotFoundError(f"No {os.path.join(in_root, 'train', '*.jsonl')} files")
    found = list(trains)
    for name in ("val", "test"):
        candidates = [os.path.join(in_root, name + s) for s in reversed(_SUFFIXES)]
        present = [path for path in candidates if os.path.isfile(path)]
        if not present:
            raise FileNotFoundError(f"Missing {candidates[0]}")
        found += present
    stems = Counter(_stem(path) for path in found)
    twice = sorted(stem for stem, count in stems.items() if count > 1)
    if twice:
        raise ValueError(f"Both .jsonl and .jsonl.zst for {twice[0]}; keep only one")
    return found


def each_task(in_root: str, out_root: str, compression: str, hashes: list[str], size_limit: int,
              in_files: list[str]) -> Iterator[Task]:
    """The task of each input file: it goes to the same relative path under `out_root`, less its
    suffix (``train/00.jsonl`` -> ``train/00``, ``val.jsonl`` -> ``val``)."""
    for in_file in in_files:
        relative = os.path.relpath(_stem(in_file), in_root)
        if relative.startswith(".."):
            raise ValueError(f"{in_file} is not under {in_root}")
        yield in_file, os.path.join(out_root, relative), compression, hashes, size_limit


@contextmanager
def open_jsonl(path: str) -> Iterator[IO[str]]:
    """The file as text lines, decompressing ``.zst`` as a stream (never all in memory).

    Raises:
        MissingDependencyError: a ``.zst`` file with neither `zstandard` nor ``zstd`` at hand.
    """
    if not path.endswith(".zst"):
        with open(path, encoding="utf-8") as file:
            yield file
        return
    try:
        import zstandard
    except ImportError:
        zstandard = None
    if zstandard is not None:
        with open(path, "rb") as raw:
            reader = zstandard.ZstdDecompressor().stream_reader(raw)
            yield io.TextIOWrapper(reader, encoding="utf-8")
        return
    command = shutil.which("zstd")
    if command is None:
        raise MissingDependencyError(f"Reading {path} needs the zstandard package or the zstd "
                                     "command: pip install zstandard")
    with subprocess.Popen([command, "-dc", "--", path], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        yield io.TextIOWrapper(proc.stdout, encoding="utf-8")
        proc.stdout.close()
    if proc.returncode:
        raise ValueError(f"zstd could not decompress {path} (exit status {proc.returncode})")


def file_to_dir(task: Task) -> dict[str, int]:
    """Convert one input file into an MDS folder; returns its sample count per Pile subset.

    Raises:
        ValueError: a line whose keys are not exactly ``text`` and ``meta.pile_set_name``.
    """
    in_file, out_dir, compression, hashes, size_limit = task
    counts: Counter[str] = Counter()
    with MDSWriter(out=out_dir, columns=COLUMNS, compression=writer_compression(compression),
                   hashes=hashes, size_limit=size_limit) as writer, open_jsonl(in_file) as lines:
        for number, line in enumerate(lines, 1):
            obj = json.loads(line)
            if sorted(obj) != ["meta", "text"]:
                raise ValueError(f"Invalid sample fields. {in_file}:{number} has {sorted(obj)}")
            if not isinstance(obj["meta"], dict) or sorted(obj["meta"]) != ["pile_set_name"]:
                raise ValueError(f"Invalid sample meta fields. {in_file}:{number}")
            name = obj["meta"]["pile_set_name"]
            writer.write({"text": obj["text"], "pile_set_name": name})
            counts[name] += 1
    return dict(counts)


def with_id(basename: str, shard_id: int) -> str:
    """``shard.00003.mds.zstd`` with id 7 -> ``shard.00007.mds.zstd``."""
    parts = basename.split(".")
    parts[1] = f"{shard_id:05}"
    return ".".join(parts)


def merge_shard_groups(root: str) -> None:
    """Flatten the sub-datasets in `root`'s subfolders into `root`: shards renumbered in folder
    order and moved up, one index, the subfolders removed (the reference's train layout)."""
    index_name = get_index_basename()
    infos: list[dict[str, Any]] = []
    for subdir in sorted(e.path for e in os.scandir(root) if e.is_dir()):
        index_path = os.path.join(subdir, index_name)
        with open(index_path) as file:
            shards = json.load(file)["shards"]
        for info in shards:
            shard_id = len(infos)
            for key in ("raw_data", "zip_data"):
                if info.get(key):
                    old = info[key]["basename"]
                    info[key]["basename"] = with_id(old, shard_id)
                    if os.path.exists(os.path.join(subdir, old)):
                        os.rename(os.path.join(subdir, old),
                                  os.path.join(root, info[key]["basename"]))
            infos.append(info)
        os.remove(index_path)
        os.rmdir(subdir)
    with open(os.path.join(root, index_name), "w") as file:
        file.write(json.dumps({"version": 2, "shards": infos}, sort_keys=True))


def convert_pile(in_root: str, out_root: str, compression: str = "zstd:16",
                 hashes: list[str] | None = None, size_limit: int = 1 << 27,
                 num_procs: int | None = None, progress_bar: bool = True
                 ) -> list[tuple[str, dict[str, int]]]:
    """Convert every input file (in `num_procs` processes; None: one per CPU, 1: in this one),
    then merge the training folders. Returns ``(input file, counts)`` in input order.

    Raises:
        ValueError: `out_root` is a URL (the merge moves files, so it must be local).
    """
    if scheme_of(out_root) not in ("", "file"):
        raise ValueError(f"--out_root must be a local directory (the training shards are "
                         f"merged in place), not {out_root}; upload the result afterwards")
    in_files = find_inputs(in_root)
    tasks = list(each_task(in_root, out_root, compression, list(hashes or []), size_limit,
                           in_files))
    results = []
    with make_progress(progress_bar, len(tasks), unit="file", desc="files") as progress:
        if num_procs == 1:
            counters: Iterator[dict[str, int]] = map(file_to_dir, tasks)
            for in_file, counts in zip(in_files, counters):
                results.append((in_file, counts))
                progress(1)
        else:
            with Pool(num_procs) as pool:
                for in_file, counts in zip(in_files, pool.imap(file_to_dir, tasks)):
                    results.append((in_file, counts))
                    progress(1)
    merge_shard_groups(os.path.join(out_root, "train"))
    return results


def main(args: Namespace) -> None:
    """Convert the Pile, printing one JSON line of subset counts per input file."""
    results = convert_pile(args.in_root, args.out_root, args.compression,
                           get_list_arg(args.hashes), args.size_limit)
    for in_file, counts in results:
        print(json.dumps({"file": in_file, "counts": counts}, sort_keys=True))


if __name__ == "__main__":
    main(parse_args())
