"""ImageNet (an ``IN_ROOT/<split>/<class>/<image>`` tree) to MDS:
``python -m streaming.vision.convert.imagenet --in_root RAW --out_root OUT``.

Each split becomes ``OUT/<split>`` with columns `i` (position in the split's sorted file list),
`x` (the JPEG file's bytes, stored as they are: no decode, no re-encode) and `y` (class id), in a
random order, which `StreamingImageNet` reads. Class ids follow the sorted file paths (for
ImageNet's synset folders, the sorted folder names) and every split must have the same classes,
so ids mean the same thing in train and val.
"""

from __future__ import annotations

import os
from argparse import ArgumentParser, Namespace
from collections.abc import Iterator, Sequence
from glob import glob
from typing import Any

import numpy as np

from streaming.base._reimports import reimported as _reimported
from streaming.format.writer_args import SIZE_LIMIT
from streaming.units import get_list_arg
from streaming.vision.convert._common import add_writer_flags, write_samples

__all__ = ["check_extensions", "convert_split", "get_classes", "main", "parse_args"]


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Convert an ImageNet folder tree to MDS.")
    add_writer_flags(parser, compression="", size_limit=SIZE_LIMIT)
    parser.add_argument("--splits", type=str, default="train,val",
                        help="Comma-separated split folders under --in_root. Default: train,val")
    parser.add_argument("--validate", type=int, default=1,
                        help="Open every file with PIL first, failing on non-images (1) or not "
                             "(0). Default: 1")
    parser.add_argument("--extensions", type=str, default="jpeg",
                        help="Comma-separated file extensions allowed. Default: jpeg")
    return parser.parse_args(argv)


def check_extensions(filenames: list[str], extensions: set[str]) -> None:
    """Fail on the first file whose extension (case-insensitive) is not in `extensions`.

    Raises:
        ValueError: naming the file and the allowed extensions.
    """
    for filename in filenames:
        ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
        if ext not in extensions:
            raise ValueError(f"{filename}: extension {ext!r} is not one of "
                             f"{sorted(extensions)} (see --extensions)")


def get_classes(filenames: list[str], class_names: list[str] | None = None
                ) -> tuple[list[int], list[str]]:
    """Class id of each ``.../<class>/<file>`` and the sorted class names.

    Ids are given in order of first appearance in `filenames` (sorted paths, so for folder names
    of equal length, as ImageNet's synsets, the sorted order).

    Raises:
        ValueError: `class_names` (another split's) differs from these.
    """
    ids: dict[str, int] = {}
    classes = [ids.setdefault(os.path.basename(os.path.dirname(f)), len(ids)) for f in filenames]
    names = sorted(ids)
    if class_names is not None and class_names != names:
        only_here = sorted(set(names) - set(class_names))
        only_there = sorted(set(class_names) - set(names))
        raise ValueError(f"Splits have different classes: only in this split {only_here[:5]}, "
                         f"only in the previous one {only_there[:5]}")
    return classes, names


def convert_split(in_root: str, out_root: str, split: str, *, compression: str | None = None,
                  hashes: list[str] | None = None, size_limit: int = SIZE_LIMIT,
                  progress_bar: bool = True, leave: bool = False, validate: bool = True,
                  extensions: set[str] | None = None,
                  class_names: list[str] | None = None) -> list[str]:
    """Convert ``in_root/split/*/*`` into ``out_root/split``; returns the class names.

    Raises:
        FileNotFoundError: no images under ``in_root/split``.
        ValueError: a file with another extension, or classes unlike `class_names`.
        PIL.UnidentifiedImageError: with `validate`, a file PIL cannot read.
    """
    filenames = sorted(glob(os.path.join(in_root, split, "*", "*")))
    if not filenames:
        raise FileNotFoundError(f"No images in {os.path.join(in_root, split, '<class>')}/")
    check_extensions(filenames, extensions or {"jpeg"})
    classes, names = get_classes(filenames, class_names)
    columns = {"i": "int", "x": "jpeg", "y": "int"}

    def samples() -> Iterator[dict[str, Any]]:
        for index in np.random.permutation(len(filenames)).tolist():
            if validate:
                _check_image(filenames[index])
            with open(filenames[index], "rb") as file:
                yield {"i": index, "x": file.read(), "y": classes[index]}

    write_samples(os.path.join(out_root, split), columns, samples(), len(filenames),
                  compression=compression, hashes=hashes, size_limit=size_limit,
                  progress_bar=progress_bar, leave=leave, desc=split)
    return names


def _check_image(filename: str) -> None:
    """PIL reads the header (a cheap check that the file is an image at all)."""
    from PIL import Image

    with Image.open(filename):
        pass


def main(args: Namespace) -> None:
    """Convert every split named in ``args.splits``."""
    class_names = None
    for split in get_list_arg(args.splits):
        class_names = convert_split(
            args.in_root, args.out_root, split, compression=args.compression,
            hashes=get_list_arg(args.hashes), size_limit=args.size_limit,
            progress_bar=bool(args.progress_bar), leave=bool(args.leave),
            validate=bool(args.validate), extensions=set(get_list_arg(args.extensions)),
            class_names=class_names)


if __name__ == "__main__":
    main(parse_args())

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
