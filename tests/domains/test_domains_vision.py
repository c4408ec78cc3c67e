"""Vision datasets over small MDS datasets, without torchvision: transforms and get_item."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import torch
from PIL import Image

from streaming.vision import (
    StreamingADE20K,
    StreamingCIFAR10,
    StreamingCOCO,
    StreamingImageNet,
    base as vision_base,
)

RNG = np.random.default_rng(7)
PIXELS = [RNG.integers(0, 256, (4, 6, 3), dtype=np.uint8) for _ in range(12)]
# Labels in the order mosaicml-streaming 0.13.0 yields the `cifar_remote` dataset below with
# StreamingImageNet(batch_size=4, shuffle=True, num_canonical_nodes=1), one process.
REFERENCE_ORDER = [4, 5, 11, 10, 8, 9, 7, 6, 2, 3, 0, 1]


def _scaled(pixels: np.ndarray) -> np.ndarray:
    """What torchvision's to_tensor gives for uint8 HWC pixels: CHW float32 / 255."""
    return pixels.transpose(2, 0, 1).astype(np.float32) / np.float32(255)


@pytest.fixture
def cifar_remote(write_mds) -> str:
    samples = [{"x": Image.fromarray(p), "y": i} for i, p in enumerate(PIXELS)]
    return write_mds({"x": "pil", "y": "int"}, samples, size_limit=400)


def test_transforms_conflict_is_rejected_before_any_io() -> None:
    message = "Only transforms or transform/target_transform can be passed as an argument"
    for extra in ({"transform": str}, {"target_transform": str}):
        with pytest.raises(ValueError, match=message):
            StreamingCIFAR10(remote="/does/not/exist", batch_size=1, transforms=print, **extra)


def test_batch_size_is_required() -> None:
    with pytest.raises(TypeError, match="batch_size"):
        StreamingImageNet(remote="/does/not/exist")  # type: ignore[call-arg]


def test_default_get_item_is_to_tensor(cifar_remote, cache_dir) -> None:
    with StreamingCIFAR10(remote=cifar_remote, local=cache_dir(), batch_size=2) as ds:
        assert ds.num_shards > 1
        for i in (0, 5, 11):
            x, y = ds[i]
            assert isinstance(x, torch.Tensor) and x.dtype == torch.float32
            assert np.array_equal(x.numpy(), _scaled(PIXELS[i])) and y == i
        assert ds.transform is None and ds.target_transform is None


def test_separate_and_joint_transforms(cifar_remote, cache_dir) -> None:
    with StreamingCIFAR10(remote=cifar_remote, local=cache_dir(), batch_size=2,
                          transform=np.asarray, target_transform=lambda y: -y) as ds:
        x, y = ds[3]
        assert np.array_equal(x, PIXELS[3]) and y == -3
    joint = lambda x, y: (x.size, y * 10)
    with StreamingCIFAR10(remote=cifar_remote, local=cache_dir(), batch_size=2,
                          transforms=joint) as ds:
        assert ds.transforms is joint
        assert ds[4] == ((6, 4), 40)


def test_iteration_uses_get_item_in_reference_order(cifar_remote, cache_dir) -> None:
    # Needs the domain defaults (orig / py1s / 1 << 18) to reproduce the reference's order.
    with StreamingImageNet(remote=cifar_remote, local=cache_dir(), batch_size=4, shuffle=True,
                           num_canonical_nodes=1, transform=lambda x: 0) as ds:
        labels = [y for x, y in ds]
    assert sorted(labels) == list(range(12))
    assert labels == REFERENCE_ORDER


def test_jpeg_input(write_mds, cache_dir) -> None:
    remote = write_mds({"x": "jpeg", "y": "int"},
                       [{"x": Image.fromarray(np.full((8, 8, 3), 200, np.uint8)), "y": 1}])
    with StreamingImageNet(remote=remote, local=cache_dir(), batch_size=1) as ds:
        x, y = ds[0]
        assert x.shape == (3, 8, 8) and y == 1
        assert abs(float(x.mean()) - 200 / 255) < 0.02


def test_ade20k_joint_then_separate_transforms(write_mds, cache_dir) -> None:
    samples = [{"x": Image.fromarray(p), "y": Image.fromarray(p[:, :, 0])} for p in PIXELS[:3]]
    remote = write_mds({"x": "png", "y": "png"}, samples)
    calls = []

    def joint(pair):
        calls.append(pair)
        image, mask = pair
        return image.transpose(Image.FLIP_LEFT_RIGHT), mask.transpose(Image.FLIP_LEFT_RIGHT)

    with StreamingADE20K(remote=remote, local=cache_dir(), joint_transform=joint,
                         transform=np.asarray, target_transform=np.asarray) as ds:
        x, y = ds[2]
    assert len(calls) == 1 and isinstance(calls[0], tuple)
    assert np.array_equal(x, PIXELS[2][:, ::-1]) and np.array_equal(y, PIXELS[2][:, ::-1, 0])
    with StreamingADE20K(remote=remote, local=cache_dir()) as ds:
        x, y = ds[1]
    assert isinstance(x, Image.Image) and np.array_equal(np.asarray(x), PIXELS[1])


def test_coco_sample_layout_and_transform(write_mds, cache_dir) -> None:
    gray = Image.fromarray(PIXELS[0][:, :, 0])
    sample = {"img": gray, "img_id": 42, "htot": 4, "wtot": 6,
              "bbox_sizes": np.array([[0.1, 0.2, 0.3, 0.4]], np.float32),
              "bbox_labels": np.array([7], np.int64)}
    columns = {"img": "pil", "img_id": "int", "htot": "int", "wtot": "int",
               "bbox_sizes": "ndarray:float32", "bbox_labels": "ndarray:int64"}
    remote = write_mds(columns, [sample])
    with StreamingCOCO(remote=remote, local=cache_dir()) as ds:
        img, img_id, size, sizes, labels = ds[0]
    assert img.mode == "RGB" and img_id == 42 and size == (4, 6)
    assert labels.tolist() == [7] and sizes.shape == (1, 4)

    def transform(img, size, sizes, labels):
        return img.size, (size[0] * 2, size[1] * 2), sizes * 0, labels + 1

    with StreamingCOCO(remote=remote, local=cache_dir(), transform=transform) as ds:
        img, img_id, size, sizes, labels = ds[0]
    assert img == (6, 4) and size == (8, 12) and labels.tolist() == [8]
    assert not sizes.any()


def test_vision_base_prefers_torchvision(monkeypatch) -> None:
    fake_base = type("VisionDataset", (), {})
    package = types.ModuleType("torchvision")
    package.__spec__ = __import__("importlib.machinery").machinery.ModuleSpec("torchvision", None)
    datasets = types.ModuleType("torchvision.datasets")
    datasets.VisionDataset = fake_base  # type: ignore[attr-defined]
    package.datasets = datasets  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torchvision", package)
    monkeypatch.setitem(sys.modules, "torchvision.datasets", datasets)
    assert vision_base._vision_base() is fake_base


def test_vision_base_survives_a_broken_torchvision(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torchvision", None)  # import raises ImportError
    assert vision_base._vision_base() is vision_base._TransformHolder


def test_repr_names_class_and_transforms(cifar_remote, cache_dir) -> None:
    with StreamingCIFAR10(remote=cifar_remote, local=cache_dir(), batch_size=2) as ds:
        text = repr(ds)
    assert "StreamingCIFAR10" in text and "StandardTransform" in text
