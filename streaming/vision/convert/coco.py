"""COCO 2017 detection to MDS:
``python -m streaming.vision.convert.coco --in_root COCO --out_root OUT``.

Reads ``{train,val}2017/`` and ``annotations/instances_{train,val}2017.json`` and writes
``OUT/train`` and ``OUT/val`` with the columns `StreamingCOCO` reads: `img` (the JPEG file's
bytes), `img_id`, `htot`/`wtot` (height/width from the annotations), `bbox_sizes` (float32
``(n, 4)``: left, top, right, bottom as fractions of the width/height) and `bbox_labels` (int64:
category ids renumbered 1..N in the order of the file's categories; 0 is the background). Images
without any box are left out, as the reference does. Only the standard library, numpy and Pillow
are needed (no torch, no pycocotools).
"""

from __future__ import annotations

import json
import os
from argparse import ArgumentParser, Namespace
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streaming.base._reimports import reimported as _reimported
from streaming.vision.convert._common import add_writer_flags, run_published_splits, write_samples

__all__ = ["COLUMNS", "SPLITS", "CocoImage", "convert_split", "each", "load_annotations", "main",
           "parse_args"]

COLUMNS = {"img": "jpeg", "img_id": "int", "htot": "int", "wtot": "int",
           "bbox_sizes": "ndarray:float32", "bbox_labels": "ndarray:int64"}
# split -> (expected samples: images with at least one box, shuffle at conversion)
SPLITS = {"train": (117266, True), "val": (4952, False)}


@dataclass
class CocoImage:
    """One annotated image: file name, size, and its ``(l, t, w, h)`` boxes with labels."""

    img_id: int
    file_name: str
    height: int
    width: int
    boxes: list[tuple[list[float], int]] = field(default_factory=list)


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Convert COCO 2017 detection to MDS.")
    add_writer_flags(parser, compression="", size_limit=1 << 25)
    return parser.parse_args(argv)


def load_annotations(path: str) -> list[CocoImage]:
    """The images of an ``instances_*.json`` that have at least one box, in file order.

    Raises:
        ValueError: an image id listed twice, or a box on an unknown image or category.
    """
    with open(path) as file:
        data = json.load(file)
    label_of = {cat["id"]: label for label, cat in enumerate(data["categories"], 1)}
    images: dict[int, CocoImage] = {}
    for img in data["images"]:
        if img["id"] in images:
            raise ValueError(f"{path}: image id {img['id']} is listed twice")
        images[img["id"]] = CocoImage(img["id"], img["file_name"], img["height"], img["width"])
    for ann in data["annotations"]:
        try:
            images[ann["image_id"]].boxes.append((ann["bbox"], label_of[ann["category_id"]]))
        except KeyError as err:
            raise ValueError(f"{path}: annotation {ann.get('id')} names unknown "
                             f"image or category {err}") from err
    return [image for image in images.values() if image.boxes]


def _boxes(image: CocoImage) -> tuple[np.ndarray, np.ndarray]:
    """Boxes as fractions of the image (computed in float64, stored as float32) and labels."""
    h, w = image.height, image.width
    sizes = [(left / w, top / h, (left + bw) / w, (top + bh) / h)
             for (left, top, bw, bh), _ in image.boxes]
    labels = [label for _, label in image.boxes]
    return np.array(sizes, dtype=np.float32), np.array(labels, dtype=np.int64)


def each(images: Sequence[CocoImage], img_dir: str, shuffle: bool) -> Iterator[dict[str, Any]]:
    """The sample dict of each image, in a random order when `shuffle`.

    Raises:
        PIL.UnidentifiedImageError: an image file PIL cannot read.
    """
    from PIL import Image

    order = np.random.permutation(len(images)) if shuffle else np.arange(len(images))
    for index in order.tolist():
        image = images[index]
        path = os.path.join(img_dir, image.file_name)
        with Image.open(path):  # fail on a broken file here, not in training
            pass
        with open(path, "rb") as file:
            data = file.read()
        sizes, labels = _boxes(image)
        yield {"img": data, "img_id": image.img_id, "htot": image.height, "wtot": image.width,
               "bbox_sizes": sizes, "bbox_labels": labels}


def convert_split(in_root: str, out_root: str, split: str, *, shuffle: bool | None = None,
                  expected_num_samples: int | None = None, compression: str | None = None,
                  hashes: list[str] | None = None, size_limit: int = 1 << 25,
                  progress_bar: bool = True, leave: bool = False) -> int:
    """Convert ``in_root/<split>2017`` into ``out_root/split``; returns the samples written.

    Args:
        shuffle: shuffle the samples (default: as the reference, train yes and val no).
        expected_num_samples: fail before writing anything unless the split has this many
            images with boxes.

    Raises:
        FileNotFoundError: the images folder or the annotations file is missing.
        ValueError: the sample count is not `expected_num_samples`.
    """
    img_dir = os.path.join(in_root, f"{split}2017")
    if not os.path.exists(img_dir):
        raise FileNotFoundError(f"Images path does not exist: {img_dir}")
    ann_file = os.path.join(in_root, "annotations", f"instances_{split}2017.json")
    if not os.path.exists(ann_file):
        raise FileNotFoundError(f"Annotations file does not exist: {ann_file}")
    images = load_annotations(ann_file)
    if expected_num_samples is not None and len(images) != expected_num_samples:
        raise ValueError(f"Number of samples in a dataset doesn't match. Expected "
                         f"{expected_num_samples}, but got {len(images)} ({ann_file})")
    if shuffle is None:
        shuffle = SPLITS[split][1] if split in SPLITS else False
    write_samples(os.path.join(out_root, split), COLUMNS, each(images, img_dir, shuffle),
                  len(images), compression=compression, hashes=hashes, size_limit=size_limit,
                  progress_bar=progress_bar, leave=leave, desc=split)
    return len(images)


def main(args: Namespace) -> None:
    """Convert train, then val, each checked against its published sample count."""
    run_published_splits(convert_split, SPLITS, args)


if __name__ == "__main__":
    main(parse_args())

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
