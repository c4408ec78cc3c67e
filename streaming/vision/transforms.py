"""`to_tensor` and `StandardTransform`: the default image handling of the vision datasets.

Same results as torchvision's `to_tensor` (CHW layout, 8-bit data scaled to [0, 1] in the
default float dtype, wider data kept as is) without importing torchvision, which is optional.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["StandardTransform", "to_tensor"]

# PIL modes whose pixels are not 8-bit; torchvision reads them with these dtypes (note I;16 as a
# *signed* int16, values above 32767 wrap) and does not rescale them.
_WIDE_MODES = {
    "I": np.int32,
    "I;16" if sys.byteorder == "little" else "I;16B": np.int16,
    "F": np.float32,
}


def _pil_to_hwc(pic: Any) -> np.ndarray:
    """A PIL image as an (H, W, C) array with torchvision's dtype choices."""
    array = np.array(pic, _WIDE_MODES.get(pic.mode, np.uint8), copy=True)
    if pic.mode == "1":
        array = array * np.uint8(255)
    width, height = pic.size
    return array.reshape(height, width, len(pic.getbands()))


def to_tensor(pic: Any) -> torch.Tensor:
    """Convert a PIL image or an (H, W[, C]) array to a (C, H, W) tensor.

    uint8 data (and 8-bit PIL modes) become the default float dtype divided by 255; other
    dtypes keep their values and type.

    Raises:
        TypeError: for anything but a PIL image or a numpy array.
        ValueError: for an array that is not 2- or 3-dimensional.
    """
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        array = pic[:, :, None] if pic.ndim == 2 else pic
    elif hasattr(pic, "getbands") and hasattr(pic, "mode"):
        array = _pil_to_hwc(pic)
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    tensor = torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))
    if tensor.dtype == torch.uint8:
        return tensor.to(torch.get_default_dtype()).div_(255)
    return tensor


class StandardTransform:
    """Separate input and target transforms applied as one `(x, y)` transform.

    Without an input transform the input goes through `to_tensor`, as in the reference.

    Args:
        transform: applied to the input.
        target_transform: applied to the target.
    """

    def __init__(self, transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, x: Any, y: Any) -> tuple[Any, Any]:
        x = self.transform(x) if self.transform else to_tensor(x)
        if self.target_transform:
            y = self.target_transform(y)
        return x, y

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(transform={self.transform!r}, "
                f"target_transform={self.target_transform!r})")
