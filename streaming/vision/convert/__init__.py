"""Scripts that turn the raw image datasets into the MDS layouts `streaming.vision` reads.

Each module runs as ``python -m streaming.vision.convert.<name>`` with the reference's flags:
`cifar10` and `fake_cifar10` (through `base.convert_image_class_dataset`), `imagenet`, `ade20k`
and `coco`. Importing them needs no optional package; torchvision (CIFAR-10 only) is imported
when a conversion runs. See docs/domain_convert.md.
"""

from __future__ import annotations

__all__: list[str] = []
