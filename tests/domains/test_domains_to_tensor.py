"""Our torchvision-free `to_tensor`: torchvision's layout, dtypes and scaling.

Expected values were checked bit-for-bit against torchvision 0.29's `to_tensor` for every PIL
mode below; here they are restated from its documented rules.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from streaming.vision.transforms import StandardTransform, to_tensor

PIXELS = np.random.default_rng(3).integers(0, 256, (5, 7, 3), dtype=np.uint8)


@pytest.mark.parametrize("mode,channels", [("RGB", 3), ("L", 1), ("RGBA", 4), ("P", 1),
                                           ("LA", 2), ("CMYK", 4), ("YCbCr", 3)])
def test_8bit_modes_scale_to_unit_float(mode: str, channels: int) -> None:
    image = Image.fromarray(PIXELS).convert(mode)
    hwc = np.asarray(image).reshape(5, 7, channels)
    tensor = to_tensor(image)
    assert tensor.dtype == torch.float32 and tensor.shape == (channels, 5, 7)
    expected = hwc.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    assert np.array_equal(tensor.numpy(), expected)


def test_bilevel_mode_is_0_or_1() -> None:
    tensor = to_tensor(Image.fromarray(PIXELS).convert("1"))
    assert tensor.shape == (1, 5, 7) and set(tensor.unique().tolist()) <= {0.0, 1.0}


def test_wide_modes_keep_values_and_dtype() -> None:
    as_int = to_tensor(Image.fromarray(PIXELS).convert("I"))
    assert as_int.dtype == torch.int32 and as_int.max() <= 255
    as_float = to_tensor(Image.fromarray(PIXELS[:, :, 0].astype(np.float32) * 1.5))
    assert as_float.dtype == torch.float32
    assert np.array_equal(as_float[0].numpy(), PIXELS[:, :, 0] * np.float32(1.5))
    sixteen = Image.fromarray(PIXELS[:, :, 0].astype(np.uint16) * 300)
    assert sixteen.mode == "I;16"
    # torchvision reads I;16 as signed int16 (so values above 32767 wrap); we do the same.
    expected = (PIXELS[:, :, 0].astype(np.uint16) * 300).astype(np.int16)
    assert np.array_equal(to_tensor(sixteen)[0].numpy(), expected)


def test_arrays() -> None:
    assert np.array_equal(to_tensor(PIXELS).numpy(),
                          PIXELS.transpose(2, 0, 1).astype(np.float32) / np.float32(255))
    gray = to_tensor(PIXELS[:, :, 0])
    assert gray.shape == (1, 5, 7)
    floats = PIXELS.astype(np.float64)[:, ::-1]  # non-contiguous input, kept unscaled
    out = to_tensor(floats)
    assert out.dtype == torch.float64 and np.array_equal(out.numpy(), floats.transpose(2, 0, 1))


def test_default_float_dtype_is_respected() -> None:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert to_tensor(PIXELS).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)


def test_bad_inputs() -> None:
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        to_tensor([[1, 2]])
    with pytest.raises(ValueError, match="2/3 dimensional"):
        to_tensor(np.zeros((1, 2, 3, 4), np.uint8))


def test_standard_transform() -> None:
    x, y = StandardTransform()(PIXELS, 3)
    assert isinstance(x, torch.Tensor) and y == 3
    assert StandardTransform(np.shape, str)(PIXELS, 3) == ((5, 7, 3), "3")
