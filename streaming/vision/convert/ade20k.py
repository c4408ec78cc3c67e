"""ADE20K (ADEChallengeData2016) to MDS:
``python -m streaming.vision.convert.ade20k --in_root ADEChallengeData2016 --out_root OUT``.

Reads ``images/{training,validation}/ADE_<split>_<uid>.jpg`` and the matching
``annotations/.../ADE_<split>_<uid>.png`` and writes ``OUT/train`` and ``OUT/val`` with columns
`uid` (bytes), `x` (the JPEG's bytes) and `y` (the PNG mask's bytes), which `StreamingADE20K`
reads. The command line checks the published sample counts (20206 train after dropping four
known-corrupt images, 2000 val) before writing, so a partial download fails early.
"""

from __future__ import annotations

import os
import random
from argparse import ArgumentParser, Namespace
from collections.abc import Iterable, Iterator, Sequence
from glob import glob
from typing import Any

from streaming.base._reimports import reimported as _reimported
from streaming.vision.convert._common import add_writer_flags, run_published_splits, write_samples

__all__ = ["COLUMNS", "CORRUPTED_TRAIN_UIDS", "SPLITS", "convert_split", "each", "get", "main",
           "parse_args"]

COLUMNS = {"uid": "bytes", "x": "jpeg", "y": "png"}
# Train images whose files are broken in the official archive; the reference leaves them out.
CORRUPTED_TRAIN_UIDS = frozenset({"00003020", "00001701", "00013508", "00008455"})
# split -> (expected samples, shuffle at conversion)
SPLITS = {"train": (20206, True), "val": (2000, False)}
_SUBDIRS = {"train": "training", "val": "validation"}


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line).

    ``--splits`` is accepted, as the reference's parser does, but both splits are always
    converted.
    """
    parser = ArgumentParser(description="Convert ADE20K to MDS.")
    add_writer_flags(parser, compression="", size_limit=1 << 22)
    parser.add_argument("--splits", type=str, default="train,val",
                        help="Accepted for compatibility; train and val are always converted")
    return parser.parse_args(argv)


def get(in_root: str, split: str, shuffle: bool) -> list[tuple[str, str, str]]:
    """``(uid, image path, annotation path)`` of every sample of `split` (train or val).

    Raises:
        ValueError: another split name.
        FileNotFoundError: the split's images or annotations folder is missing.
    """
    if split not in _SUBDIRS:
        raise ValueError(f"Split must be one of 'train', 'val', not {split!r}")
    images_dir = os.path.join(in_root, "images", _SUBDIRS[split])
    annotations_dir = os.path.join(in_root, "annotations", _SUBDIRS[split])
    for kind, path in (("Images", images_dir), ("Annotations", annotations_dir)):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{kind} path does not exist: {path}")
    images = sorted(glob(os.path.join(images_dir, f"ADE_{split}_*.jpg")))
    uids = [os.path.basename(path)[:-len(".jpg")][-8:] for path in images]
    if split == "train":
        uids = [uid for uid in uids if uid not in CORRUPTED_TRAIN_UIDS]
    samples = [(uid, os.path.join(images_dir, f"ADE_{split}_{uid}.jpg"),
                os.path.join(annotations_dir, f"ADE_{split}_{uid}.png")) for uid in uids]
    if shuffle:
        random.shuffle(samples)
    return samples


def each(samples: Iterable[tuple[str, str, str]]) -> Iterator[dict[str, Any]]:
    """The sample dict of each ``(uid, image path, annotation path)``: the files' raw bytes."""
    for uid, image_path, annotation_path in samples:
        with open(image_path, "rb") as image, open(annotation_path, "rb") as annotation:
            yield {"uid": uid.encode("utf-8"), "x": image.read(), "y": annotation.read()}


def convert_split(in_root: str, out_root: str, split: str, *, shuffle: bool | None = None,
                  expected_num_samples: int | None = None, compression: str | None = None,
                  hashes: list[str] | None = None, size_limit: int = 1 << 22,
                  progress_bar: bool = True, leave: bool = False) -> int:
    """Convert one split into ``out_root/split``; returns the number of samples written.

    Args:
        shuffle: shuffle the samples (default: as the reference, train yes and val no).
        expected_num_samples: fail before writing anything unless the split has this many.

    Raises:
        ValueError: the split does not have `expected_num_samples` samples.
    """
    if shuffle is None:
        shuffle = SPLITS[split][1] if split in SPLITS else False
    samples = get(in_root, split, shuffle)
    if expected_num_samples is not None and len(samples) != expected_num_samples:
        raise ValueError(f"Number of samples in a dataset doesn't match. Expected "
                         f"{expected_num_samples}, but got {len(samples)} ({split} in "
                         f"{in_root})")
    write_samples(os.path.join(out_root, split), COLUMNS, each(samples), len(samples),
                  compression=compression, hashes=hashes, size_limit=size_limit,
                  progress_bar=progress_bar, leave=leave, desc=split)
    return len(samples)


def main(args: Namespace) -> None:
    """Convert train, then val, each checked against its published sample count."""
    run_published_splits(convert_split, SPLITS, args)


if __name__ == "__main__":
    main(parse_args())

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
