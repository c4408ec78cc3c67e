"""CIFAR-10 to MDS: ``python -m streaming.vision.convert.cifar10 --in_root RAW --out_root OUT``.

torchvision downloads the dataset into `--in_root` (when it is not there yet) and decodes it;
each split becomes ``OUT/<split>`` with the `i`/`x`/`y` columns of `convert_image_class_dataset`
(`x` as ``pil``), which `StreamingCIFAR10` reads. torchvision is needed only here, and its
absence is reported before anything is written.
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from collections.abc import Sequence

from streaming.units import get_list_arg
from streaming.vision.convert._common import add_writer_flags, import_optional
from streaming.vision.convert.base import convert_image_class_dataset

__all__ = ["main", "parse_args"]


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Convert CIFAR-10 (via torchvision) to MDS.")
    add_writer_flags(parser, compression="", size_limit=1 << 20)
    parser.add_argument("--splits", type=str, default="train,val",
                        help="Comma-separated splits: train, and any other name for the test "
                             "set. Default: train,val")
    return parser.parse_args(argv)


def main(args: Namespace) -> None:
    """Download (if needed) and convert every split named in ``args.splits``.

    Raises:
        MissingDependencyError: torchvision is not installed.
    """
    datasets = import_optional("torchvision.datasets", "The CIFAR-10 converter",
                               "'shardstream[vision]'")
    hashes = get_list_arg(args.hashes)
    for split in get_list_arg(args.splits):
        # torchvision has only train and test; every split but 'train' is the test set.
        dataset = datasets.CIFAR10(root=args.in_root, train=split == "train", download=True)
        convert_image_class_dataset(dataset, args.out_root, split, args.compression, hashes,
                                    args.size_limit, bool(args.progress_bar), bool(args.leave),
                                    "pil")


if __name__ == "__main__":
    main(parse_args())
