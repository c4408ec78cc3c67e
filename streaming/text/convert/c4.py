"""C4 (English) to MDS: ``python -m streaming.text.convert.c4 --out_root OUT``.

Streams ``c4/en`` from the Hugging Face Hub with `datasets` (imported only when this runs, and
reported as a `MissingDependencyError` when missing) and writes ``OUT/train`` and ``OUT/val``
with columns `text`, `timestamp` and `url`, which `StreamingC4` reads. The Hub's JSON files are
read by several DataLoader workers at once: `datasets` hands each worker its own files.
"""

from __future__ import annotations

import os
from argparse import ArgumentParser, Namespace
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from streaming.format.mds.writer import MDSWriter
from streaming.units import get_list_arg
from streaming.vision.convert._common import (
    add_writer_flags,
    import_optional,
    progress_for,
    writer_compression,
)

__all__ = ["COLUMNS", "SPLITS", "each", "get", "main", "parse_args", "write_split"]

COLUMNS = {"text": "str", "timestamp": "str", "url": "str"}
# (Hub split, our split, samples (for the progress bar), DataLoader workers)
SPLITS = [("train", "train", 364868892, 64), ("validation", "val", 364608, 8)]


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Convert C4 (English, from the Hugging Face Hub) to MDS.")
    add_writer_flags(parser, compression="zstd:7", size_limit=1 << 27, in_root=False)
    parser.add_argument("--batch_size", type=int, default=512,
                        help="DataLoader batch size. Default: 512")
    return parser.parse_args(argv)


def get(split: str) -> Any:
    """The Hub's C4 ``en`` `split` as a streaming (iterable) `datasets` dataset.

    Raises:
        MissingDependencyError: `datasets` is not installed.
    """
    datasets = import_optional("datasets", "The C4 converter", "datasets")
    return datasets.load_dataset(path="allenai/c4", name="en", split=split, streaming=True)


def each(dataset: Any, num_workers: int, batch_size: int) -> Iterator[dict[str, Any]]:
    """Every sample of an iterable `datasets` dataset, read by a DataLoader's workers.

    Workers beyond the dataset's file count would have nothing to read, so there are at most
    that many (and none, reading in this process, when `num_workers` is 0).
    """
    from torch.utils.data import DataLoader

    num_workers = max(0, min(num_workers, int(getattr(dataset, "n_shards", num_workers))))
    extra: dict[str, Any] = {}
    if num_workers:
        extra["prefetch_factor"] = max(1, 2 * batch_size // num_workers)
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers, **extra)
    for batch in loader:
        columns = list(batch.items())
        for row in range(len(columns[0][1]) if columns else 0):
            yield {key: values[row] for key, values in columns}


def write_split(samples: Iterable[Mapping[str, Any]], out_dir: str, *,
                compression: str | None = "zstd:7", hashes: list[str] | None = None,
                size_limit: int = 1 << 27, progress_bar: bool = True, leave: bool = False,
                total: int | None = None) -> int:
    """Write C4 samples (`text`, `timestamp`, `url`; other keys ignored) to `out_dir`; returns
    how many were written."""
    count = 0
    with MDSWriter(out=out_dir, columns=COLUMNS, compression=writer_compression(compression),
                   hashes=list(hashes or []), size_limit=size_limit,
                   progress_bar=progress_bar) as writer, \
            progress_for(progress_bar, total, leave, desc=os.path.basename(out_dir)) as progress:
        for sample in samples:
            writer.write({key: str(sample[key]) for key in COLUMNS})
            count += 1
            progress(1)
    return count


def main(args: Namespace) -> None:
    """Stream and convert the train and validation splits.

    Raises:
        MissingDependencyError: `datasets` is not installed.
    """
    hashes = get_list_arg(args.hashes)
    for hub_split, split, num_samples, num_workers in SPLITS:
        samples = each(get(hub_split), num_workers, args.batch_size)
        write_split(samples, os.path.join(args.out_root, split), compression=args.compression,
                    hashes=hashes, size_limit=args.size_limit,
                    progress_bar=bool(args.progress_bar), leave=bool(args.leave),
                    total=num_samples)


if __name__ == "__main__":
    main(parse_args())
