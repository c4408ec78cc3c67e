"""Download WebVid's videos into one MDS dataset with the videos inside the shards:
``python -m streaming.multimodal.convert.webvid.crawl_webvid --in results_2M_val.csv
--out_root OUT``.

The CSVs (``results_{2M,10M}_{train,val}.csv``) are listed at
https://m-bain.github.io/webvid-dataset/; download one first. Each row's `contentUrl` is
fetched by a pool of processes through our storage layer (its HTTP store); rows whose
download fails are skipped. Samples keep the CSV's `videoid`, `name`, `page_idx`, `page_dir` and
`contentUrl`, the `duration` in seconds (from ``PT00H00M15S``), and the video bytes as `content`,
which `StreamingInsideWebVid` reads. Samples are written as downloads finish, so their order
is not the CSV's.
"""

from __future__ import annotations

import csv
import re
from argparse import ArgumentParser, Namespace
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from multiprocessing import Pool
from typing import Any, TypeVar

from streaming.errors import MissingDependencyError
from streaming.format.mds.writer import MDSWriter
from streaming.storage import open_store

__all__ = ["COLUMNS", "crawl", "download", "each_todo", "head", "main", "parse_args",
           "parse_duration"]

T = TypeVar("T")
COLUMNS = {"videoid": "str", "name": "str", "page_idx": "str", "page_dir": "str",
           "duration": "int", "contentUrl": "str", "content": "bytes"}
_DURATION = re.compile(r"^PT(\d{2})H(\d{2})M(\d{2})S$")


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Download WebVid videos into an MDS dataset.")
    parser.add_argument("--in", type=str, required=True,
                        help="Dataset CSV file from https://m-bain.github.io/webvid-dataset/")
    parser.add_argument("--out_root", type=str, required=True,
                        help="Directory (or remote URL) to write the MDS dataset to")
    parser.add_argument("--num_procs", type=int, default=64,
                        help="Processes downloading videos. Default: 64")
    parser.add_argument("--limit", type=int, default=-1,
                        help="Process only the first LIMIT rows; -1 for all. Default: -1")
    return parser.parse_args(argv)


def each_todo(filename: str, needed: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
    """Each CSV row as a dict keyed by the header's column names.

    Raises:
        ValueError: the header lacks one of the `needed` columns (before any row is yielded).
    """
    with open(filename, newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        missing = [name for name in needed if name not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{filename} has no column(s) {missing}; its header is "
                             f"{reader.fieldnames}")
        yield from reader


def head(items: Iterable[T], limit: int) -> Iterator[T]:
    """The first `limit` items; all of them when `limit` is negative."""
    return iter(items) if limit < 0 else islice(items, limit)


def parse_duration(text: str) -> int:
    """Seconds in an ISO 8601 duration as WebVid writes it (``PT00H01M05S`` -> 65).

    Raises:
        ValueError: another format.
    """
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"Duration {text!r} is not of the form PT00H00M00S")
    hours, minutes, seconds = map(int, match.groups())
    return hours * 3600 + minutes * 60 + seconds


def download(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The row with `duration` parsed and the video's bytes as `content`, or None when the
    download fails (any error, or an HTTP status other than 200)."""
    url = obj["contentUrl"]
    base, _, name = url.rpartition("/")
    try:  # our storage layer: its HTTP client, timeouts and retries
        content = open_store(base).get(name)
    except MissingDependencyError:  # no download can work: not a row to skip, but the run
        raise
    except Exception:  # noqa: BLE001 - a failed download only skips its row
        return None
    return {**obj, "duration": parse_duration(obj["duration"]), "content": content}


def crawl(todos: Iterable[dict[str, Any]], num_procs: int) -> Iterator[dict[str, Any]]:
    """Download the rows in `num_procs` processes (1: in this one); yields successes only."""
    if num_procs <= 1:
        yield from (s for s in map(download, todos) if s is not None)
        return
    with Pool(num_procs) as pool:
        yield from (s for s in pool.imap_unordered(download, todos) if s is not None)


def main(args: Namespace) -> int:
    """Download the CSV's videos into ``args.out_root``; returns the samples written."""
    needed = [name for name in COLUMNS if name != "content"]
    todos: Iterable[dict[str, Any]] = each_todo(getattr(args, "in"), needed)
    if args.limit > 0:  # 0 or negative: every row, as the reference reads its flag
        todos = head(todos, args.limit)
    count = 0
    with MDSWriter(out=args.out_root, columns=COLUMNS) as writer:
        for sample in crawl(todos, args.num_procs):
            writer.write({key: sample[key] for key in COLUMNS})
            count += 1
    return count


if __name__ == "__main__":
    main(parse_args())
