"""Random CIFAR-10-shaped data to MDS, for benchmarks and smoke tests without a download:
``python -m streaming.vision.convert.fake_cifar10 --out DIR --num_train N --num_val M``.

Images are uniform noise (32x32 RGB), labels uniform in 0..8 as the reference's generator draws
them; the splits are ``DIR/train`` and ``DIR/val`` with the columns `StreamingCIFAR10` reads.
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from collections.abc import Sequence

import numpy as np

from streaming.vision.convert.base import convert_image_class_dataset

__all__ = ["main", "make_split", "parse_args"]


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Write a random CIFAR-10-like MDS dataset.")
    parser.add_argument("--out", type=str, default="/tmp/fake_cifar10/",
                        help="Output root directory. Default: /tmp/fake_cifar10/")
    parser.add_argument("--num_train", type=int, default=8 * 8 * 16384,
                        help="Training samples. Default: 1048576")
    parser.add_argument("--num_val", type=int, default=8 * 8 * 2048,
                        help="Validation samples. Default: 131072")
    return parser.parse_args(argv)


def make_split(root: str, split: str, count: int) -> None:
    """Write `count` random samples as ``root/split``."""
    from PIL import Image

    pixels = np.random.randint(0, 255, (count, 32, 32, 3), np.uint8)
    labels = np.random.randint(0, 9, count)
    dataset = [(Image.fromarray(image), int(label)) for image, label in zip(pixels, labels)]
    convert_image_class_dataset(dataset=dataset, out_root=root, split=split)


def main(args: Namespace) -> None:
    """Write the train and val splits."""
    make_split(args.out, "train", args.num_train)
    make_split(args.out, "val", args.num_val)


if __name__ == "__main__":
    main(parse_args())
