"""An image folder (one subfolder per class) to MDS: image bytes plus an integer label.

Classes are the sorted subfolder names and labels their positions, as torchvision's
`ImageFolder` assigns them; samples go class by class, files in sorted order. Files already in
the column's format (by their bytes' signature) are stored byte for byte (no decode); others are
re-encoded with PIL, and a file PIL cannot read fails the conversion, naming it.
"""

from __future__ import annotations

import io
import os
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

from streaming.convert.columns import ConversionError
from streaming.convert.parallel import ParallelResult, Report, run_tasks

__all__ = ["IMAGE_EXTENSIONS", "imagefolder_to_mds", "list_image_folder"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm",
                    ".pgm")
_FORMAT_OF_EXTENSION = {".jpg": "jpeg", ".jpeg": "jpeg", ".png": "png"}
_FILES_PER_TASK = 2000
_MIN_FILES_PER_TASK = 64


def list_image_folder(root: str, extensions: Sequence[str] = IMAGE_EXTENSIONS
                      ) -> tuple[list[str], list[tuple[str, int]]]:
    """``(classes, [(path, label), ...])`` of a class-per-subfolder image tree.

    Every subfolder is a class, as in torchvision's `ImageFolder`, and, as there, one without
    images is refused: counted as a class, it would shift the labels of the classes after it.

    Raises:
        ConversionError: no class folder with images under `root`, or a class folder without.
    """
    if not os.path.isdir(root):
        raise ConversionError(f"Image folder {root!r} is not a directory.")
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    files: list[tuple[str, int]] = []
    empty = []
    for label, name in enumerate(classes):
        found = sorted(
            os.path.join(dirpath, f) for dirpath, _, names in os.walk(os.path.join(root, name))
            for f in names if f.lower().endswith(tuple(extensions)))
        files += [(path, label) for path in found]
        if not found:
            empty.append(name)
    if not files:
        raise ConversionError(f"No images ({', '.join(extensions)}) in class subfolders of "
                              f"{root!r}.")
    if empty:
        raise ConversionError(
            f"Class folders of {root!r} without images ({', '.join(extensions)}): "
            f"{', '.join(empty)}. Every subfolder is a class, so each would take a label and "
            "shift those of the classes after it; remove or move them (torchvision's "
            "ImageFolder refuses them too).")
    return classes, files


_SIGNATURES = {"jpeg": b"\xff\xd8\xff", "png": b"\x89PNG\r\n\x1a\n"}


def _encode(path: str, encoding: str) -> bytes:
    """The file's bytes if they already are `encoding`'s format (by their signature, not the
    file's name: a text file named .jpg is not stored as a JPEG), else the image re-encoded.

    Raises:
        ConversionError: the file is not an image PIL can read.
    """
    with open(path, "rb") as file:
        data = file.read()
    if encoding == "bytes" or data.startswith(_SIGNATURES[encoding]):
        return data
    from PIL import Image

    try:
        image: Image.Image = Image.open(io.BytesIO(data))
        if encoding == "jpeg" and image.mode not in ("RGB", "L", "CMYK"):
            image = image.convert("RGB")
        out = io.BytesIO()
        image.save(out, format=encoding.upper())
    except Exception as err:
        raise ConversionError(f"{path}: cannot read as an image: {err}") from err
    return out.getvalue()


def _write_files(task: tuple[tuple[tuple[str, int], ...], str, str, str], writer: Any,
                 report: Report) -> None:
    files, encoding, image_column, label_column = task
    for count, (path, label) in enumerate(files, 1):
        writer.write({image_column: _encode(path, encoding), label_column: label})
        if count % 256 == 0:
            report(256)
    report(len(files) % 256)


def _warn_lossless_to_jpeg(files: list[tuple[str, int]], chosen: bool) -> None:
    """Say so when files of a lossless format (by extension) will be re-encoded as JPEG: their
    pixels change, which nobody should find out at training time."""
    lossless = sum(1 for path, _ in files
                   if _FORMAT_OF_EXTENSION.get(os.path.splitext(path)[1].lower()) != "jpeg")
    if lossless:
        why = "as asked" if chosen else "the format most files have"
        warnings.warn(f"{lossless} of {len(files)} images are not JPEG files and will be "
                      f"re-encoded as JPEG ({why}), which changes their pixels; use "
                      "image_encoding='png' (--image-encoding png) to keep them lossless, or "
                      "'bytes' to store every file as it is.", stacklevel=3)


def _majority_format(files: list[tuple[str, int]]) -> str:
    counts = Counter(_FORMAT_OF_EXTENSION.get(os.path.splitext(p)[1].lower(), "other")
                     for p, _ in files)
    best = max(("jpeg", "png"), key=lambda enc: counts[enc])
    return best if counts[best] else "jpeg"


def imagefolder_to_mds(root: str, out: Any, *, image_column: str = "x", label_column: str = "y",
                       image_encoding: str | None = None, num_workers: int | None = None,
                       files_per_task: int = _FILES_PER_TASK,
                       **options: Any) -> ParallelResult:
    """Convert ``root/<class>/**/<image>`` to MDS columns ``{x: jpeg|png, y: int}``.

    Args:
        root: the folder whose subfolders are the classes.
        out: local dir, remote URL or ``(local, remote)``.
        image_column: name of the image column (``x``, as the reference's vision datasets read).
        label_column: name of the label column (``y``).
        image_encoding: ``jpeg``, ``png`` or ``bytes``; default: the format most files have
            (ties go to jpeg). Files in another format are re-encoded (a warning says so when
            lossless files become JPEG); ``bytes`` stores every file as it is.
        num_workers: processes (default: CPU count; 0 or 1 for none).
        files_per_task: images per sub-dataset.
        **options: `run_tasks` and `MDSWriter` options.

    Returns:
        The result; ``result.details["classes"]`` lists the class names by label.
    """
    classes, files = list_image_folder(root)
    encoding = image_encoding or _majority_format(files)
    if encoding not in ("jpeg", "png", "bytes"):
        raise ConversionError(f"image_encoding must be jpeg, png or bytes, not {encoding!r}.")
    if encoding == "jpeg":
        _warn_lossless_to_jpeg(files, chosen=image_encoding is not None)
    columns = {image_column: encoding, label_column: "int"}
    workers = num_workers if num_workers is not None else os.cpu_count() or 1
    # Work for every process (4 tasks each, so a slow one does not hold the end), but never
    # sub-datasets of a handful of images: each is a folder, an index and a shard of its own.
    balanced = -(-len(files) // (4 * workers)) if workers > 1 else len(files)
    per_task = max(1, min(files_per_task, max(balanced, _MIN_FILES_PER_TASK)))
    tasks = [(tuple(files[i:i + per_task]), encoding, image_column, label_column)
             for i in range(0, len(files), per_task)]
    result = run_tasks(tasks, _write_files, out, columns=columns, num_workers=num_workers,
                       total=len(files), inputs=[root], **options)
    result.details["classes"] = classes
    return result
