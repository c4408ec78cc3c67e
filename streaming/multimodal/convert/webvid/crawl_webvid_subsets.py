"""Download the WebVid videos whose caption mentions a keyword, one MDS dataset per keyword, then
read the subsets together as a demonstration of mixing streams:
``python -m streaming.multimodal.convert.webvid.crawl_webvid_subsets --csv results_2M_val.csv
--mds_root OUT [--filters plane,train,automobile,cat,dog]``.

A row goes to ``OUT/<keyword>`` for every keyword that is a substring of its `name` (so one video
may be in several subsets). Columns are those of `crawl_webvid` less `page_idx`. Afterwards the
subsets are opened as equal-proportion streams of one `StreamingDataset` (50 samples an epoch)
and three epochs of captions are printed.
"""

from __future__ import annotations

import os
from argparse import ArgumentParser, Namespace
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any

from streaming.base._reimports import reimported as _reimported
from streaming.format.mds.writer import MDSWriter
from streaming.multimodal.convert.webvid import crawl_webvid
from streaming.multimodal.convert.webvid.crawl_webvid import crawl, download, head, parse_duration

# `download`, `head` and `parse_duration` are shared with crawl_webvid (and importable from
# here, as from the reference's module).
__all__ = ["COLUMNS", "crawl_subsets", "download", "each_todo", "get_matches", "head", "main",
           "parse_args", "parse_duration", "show_subsets"]

COLUMNS = {"videoid": "str", "name": "str", "page_dir": "str", "duration": "int",
           "contentUrl": "str", "content": "bytes"}


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Download WebVid videos into per-keyword MDS datasets.")
    parser.add_argument("--csv", type=str, required=True,
                        help="Dataset CSV file from https://m-bain.github.io/webvid-dataset/")
    parser.add_argument("--filters", type=str, default="plane,train,automobile,cat,dog",
                        help="Comma-separated keywords, one sub-dataset each. "
                             "Default: plane,train,automobile,cat,dog")
    parser.add_argument("--mds_root", type=str, required=True,
                        help="Directory under which each keyword's dataset is written")
    parser.add_argument("--num_procs", type=int, default=64,
                        help="Processes downloading videos. Default: 64")
    parser.add_argument("--limit", type=int, default=-1,
                        help="Process only the first LIMIT matching rows; -1 for all. "
                             "Default: -1")
    return parser.parse_args(argv)


def get_matches(filters: list[str], text: str) -> list[str]:
    """The keywords of `filters` that occur in `text` (case-sensitive substrings)."""
    return [keyword for keyword in filters if keyword in text]


def each_todo(filename: str, filters: list[str]) -> Iterator[dict[str, Any]]:
    """Each CSV row whose `name` matches a keyword, with the keywords under ``matches``.

    Raises:
        ValueError: the CSV lacks a column the datasets need.
    """
    needed = [name for name in COLUMNS if name != "content"]
    for row in crawl_webvid.each_todo(filename, needed):
        matches = get_matches(filters, row["name"])
        if matches:
            yield {**row, "matches": matches}


def crawl_subsets(csv_path: str, mds_root: str, filters: list[str], num_procs: int = 64,
                  limit: int = -1) -> dict[str, int]:
    """Download the matching rows into ``mds_root/<keyword>``; returns samples per keyword.

    A keyword that matched nothing (or only failed downloads) gets no dataset and a count of 0.
    """
    todos: Iterable[dict[str, Any]] = each_todo(csv_path, filters)
    if limit > 0:
        todos = head(todos, limit)
    writers: dict[str, Any] = {}
    counts = dict.fromkeys(filters, 0)
    with ExitStack() as stack:  # each writer finishes as its own `with` would, error or not
        for sample in crawl(todos, num_procs):
            row = {key: sample[key] for key in COLUMNS}
            for keyword in sample["matches"]:
                if keyword not in writers:
                    writers[keyword] = stack.enter_context(
                        MDSWriter(out=os.path.join(mds_root, keyword), columns=COLUMNS))
                writers[keyword].write(row)
                counts[keyword] += 1
    return counts


def show_subsets(mds_root: str, names: list[str], epochs: int = 3, epoch_size: int = 50) -> None:
    """Print each subset's size, then the captions of `epochs` epochs of their even mix."""
    from streaming.dataset import StreamingDataset
    from streaming.stream import Stream

    names = sorted(names)
    streams = [Stream(local=os.path.join(mds_root, name), proportion=1 / len(names))
               for name in names]
    dataset = StreamingDataset(streams=streams, epoch_size=epoch_size, batch_size=1)
    try:
        for name, num_samples in zip(names, dataset.samples_per_stream):
            print(f'Subset "{name}": {num_samples} samples')
        for epoch in range(epochs):
            print(f"Epoch {epoch}:")
            for index, sample in enumerate(dataset):
                print(f"{index:6} | {' '.join(sample['name'].split())}")
    finally:
        dataset.close()


def main(args: Namespace) -> dict[str, int]:
    """Crawl the subsets, then show them mixed; returns samples per keyword."""
    filters = args.filters.split(",") if args.filters else []
    counts = crawl_subsets(args.csv, args.mds_root, filters, args.num_procs, args.limit)
    present = [name for name, count in counts.items() if count]
    for name in sorted(set(filters) - set(present)):
        print(f'Subset "{name}": no samples downloaded, left out')
    if present:
        show_subsets(args.mds_root, present)
    return counts


if __name__ == "__main__":
    main(parse_args())

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
