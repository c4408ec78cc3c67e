"""English Wikipedia (the 2020-01-01 plain-text dump in 500 parts) to MDS:
``python -m streaming.text.convert.enwiki_text --in_root RAW --out_root OUT``.

Every non-blank line (stripped) of ``part-00000-of-00500`` ... ``part-00499-of-00500`` becomes a
``{'text': str}`` sample of ``OUT/train``, and those of ``eval.txt`` of ``OUT/val``.
"""

from __future__ import annotations

import os
from argparse import ArgumentParser, Namespace
from collections.abc import Sequence

from streaming.format.mds.writer import MDSWriter
from streaming.units import get_list_arg
from streaming.vision.convert._common import add_writer_flags, progress_for, writer_compression

__all__ = ["TRAIN_BASENAMES", "VAL_BASENAMES", "main", "parse_args", "process_split"]

TRAIN_BASENAMES = [f"part-{i:05}-of-00500" for i in range(500)]
VAL_BASENAMES = ["eval.txt"]


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Convert the English Wikipedia text dump to MDS.")
    add_writer_flags(parser, compression="zstd:7", size_limit=1 << 25)
    return parser.parse_args(argv)


def process_split(in_root: str, out_root: str, compression: str | None, hashes: list[str],
                  size_limit: int, progress_bar: int | bool, leave: int | bool,
                  basenames: list[str], split: str) -> None:
    """Write the lines of ``in_root/<basename>`` (in the given order) to ``out_root/split``.

    The bar counts input files, as they are few and large.

    Raises:
        FileNotFoundError: an input file is missing (checked before anything is written).
    """
    paths = [os.path.join(in_root, basename) for basename in basenames]
    missing = [path for path in paths if not os.path.isfile(path)]
    if missing:
        raise FileNotFoundError(f"{len(missing)} input file(s) missing for {split}, "
                                f"e.g. {missing[0]}")
    with MDSWriter(out=os.path.join(out_root, split), columns={"text": "str"},
                   compression=writer_compression(compression), hashes=list(hashes),
                   size_limit=size_limit, progress_bar=bool(progress_bar)) as writer, \
            progress_for(progress_bar, len(paths), leave, desc=split, unit="file") as progress:
        for path in paths:
            with open(path, encoding="utf-8") as file:
                for line in file:
                    text = line.strip()
                    if text:
                        writer.write({"text": text})
            progress(1)


def main(args: Namespace) -> None:
    """Convert the 500 training parts, then the evaluation file."""
    hashes = get_list_arg(args.hashes)
    for basenames, split in ((TRAIN_BASENAMES, "train"), (VAL_BASENAMES, "val")):
        process_split(args.in_root, args.out_root, args.compression, hashes, args.size_limit,
                      args.progress_bar, args.leave, basenames, split)


if __name__ == "__main__":
    main(parse_args())
