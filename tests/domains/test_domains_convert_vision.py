"""The vision conversion scripts (`streaming.vision.convert`): tiny fake ImageNet, ADE20K, COCO
and CIFAR-10 inputs converted, then read back with our domain datasets (and the reference's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest
from PIL import Image

from streaming import StreamingDataset
from streaming.errors import MissingDependencyError
from streaming.vision import StreamingADE20K, StreamingCIFAR10, StreamingCOCO, StreamingImageNet
from streaming.vision.convert import ade20k, cifar10, coco, fake_cifar10, imagenet
from streaming.vision.convert.base import convert_image_class_dataset
from tests.domains.reference_reads import REPO, need_reference, portable, reference_reads


def _image(path, seed: int, size=(12, 10), fmt: str = "JPEG", mode: str = "RGB") -> np.ndarray:
    """Write a small random image; returns its pixels as PIL decodes the written file."""
    rng = np.random.default_rng(seed)
    shape = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(rng.integers(0, 255, shape, dtype=np.uint8), mode).save(path, fmt)
    with Image.open(path) as img:
        return np.asarray(img)


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def _all(dataset) -> list:
    return [dataset[i] for i in range(len(dataset))]


@pytest.fixture
def imagenet_tree(tmp_path) -> tuple[str, dict[str, list[tuple[str, int, np.ndarray]]]]:
    """``in_root/<split>/<synset>/<n>.JPEG`` and, per split, (path, class id, pixels) sorted."""
    root = tmp_path / "imagenet"
    expected: dict[str, list[tuple[str, int, np.ndarray]]] = {}
    for split, per_class in (("train", 3), ("val", 2)):
        expected[split] = []
        for label, synset in enumerate(["n01440764", "n01443537"]):
            for n in range(per_class):
                path = str(root / split / synset / f"{split}_{n}.JPEG")
                expected[split].append((path, label, _image(path, seed=len(expected[split]))))
    return str(root), expected


def _check_imagenet(out: str, split: str, expected: list) -> None:
    with StreamingImageNet(local=out, split=split, batch_size=1, transform=np.asarray) as ds:
        pairs = _all(ds)
    raw = StreamingDataset(local=out, split=split, batch_size=1)
    indices = [raw[i]["i"] for i in range(raw.num_samples)]
    assert sorted(indices) == list(range(len(expected)))
    for (pixels, label), i in zip(pairs, indices):
        assert label == expected[i][1]
        assert np.array_equal(pixels, expected[i][2])  # the file's own bytes, decoded


def test_imagenet_function_stores_the_files_bytes(imagenet_tree, tmp_path) -> None:
    in_root, expected = imagenet_tree
    out = str(tmp_path / "out")
    names = imagenet.convert_split(in_root, out, "train", progress_bar=False, hashes=["sha1"])
    assert names == ["n01440764", "n01443537"]
    _check_imagenet(out, "train", expected["train"])
    shard = open(os.path.join(out, "train", "shard.00000.mds"), "rb").read()
    assert all(open(path, "rb").read() in shard for path, _, _ in expected["train"])
    with pytest.raises(ValueError, match="different classes"):
        imagenet.convert_split(in_root, str(tmp_path / "o2"), "val", progress_bar=False,
                               class_names=["n01440764"])


def test_imagenet_cli_writes_both_splits_with_default_hashes(imagenet_tree, tmp_path) -> None:
    in_root, expected = imagenet_tree
    out = str(tmp_path / "out")
    done = _run("streaming.vision.convert.imagenet", "--in_root", in_root, "--out_root", out,
                "--progress_bar", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    for split in ("train", "val"):
        _check_imagenet(out, split, expected[split])
        index = json.load(open(os.path.join(out, split, "index.json")))
        assert index["shards"][0]["hashes"] == ["sha1", "xxh64"]
        assert index["shards"][0]["column_encodings"] == ["int", "jpeg", "int"]
    bad = imagenet.parse_args(["--in_root", in_root, "--out_root", str(tmp_path / "bad"),
                               "--extensions", "png", "--progress_bar", "0"])
    with pytest.raises(ValueError, match=r"extension 'jpeg' is not one of \['png'\]"):
        imagenet.main(bad)


@pytest.fixture
def ade_tree(tmp_path) -> tuple[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """An ADEChallengeData2016-like tree; uid -> (image pixels, mask pixels) of kept samples."""
    root = tmp_path / "ade"
    expected = {}
    for split, sub, uids in (("train", "training", ["00000001", "00000002", "00003020"]),
                             ("val", "validation", ["00000001"])):
        for n, uid in enumerate(uids):
            image = _image(str(root / "images" / sub / f"ADE_{split}_{uid}.jpg"), n)
            mask = _image(str(root / "annotations" / sub / f"ADE_{split}_{uid}.png"), 50 + n,
                          fmt="PNG", mode="L")
            if split == "train" and uid not in ade20k.CORRUPTED_TRAIN_UIDS:
                expected[uid] = (image, mask)
    return str(root), expected


def test_ade20k_round_trips_and_drops_corrupted_uids(ade_tree, tmp_path) -> None:
    in_root, expected = ade_tree
    out = str(tmp_path / "out")
    assert ade20k.convert_split(in_root, out, "train", progress_bar=False) == 2
    raw = StreamingDataset(local=out, split="train", batch_size=1)
    uids = [raw[i]["uid"] for i in range(raw.num_samples)]
    assert sorted(uids) == [b"00000001", b"00000002"]
    with StreamingADE20K(local=out, split="train", batch_size=1) as ds:
        for uid, (image, mask) in zip(uids, _all(ds)):
            assert np.array_equal(np.asarray(image), expected[uid.decode()][0])
            assert np.array_equal(np.asarray(mask), expected[uid.decode()][1])  # PNG: exact
    with pytest.raises(ValueError, match="Expected 2000, but got 1"):
        ade20k.convert_split(in_root, str(tmp_path / "v"), "val", expected_num_samples=2000)
    assert not os.path.exists(tmp_path / "v")  # counted before anything is written
    with pytest.raises(FileNotFoundError, match="Images path does not exist"):
        ade20k.get(str(tmp_path / "nowhere"), "val", shuffle=False)


def test_ade20k_main_checks_the_published_counts(ade_tree, tmp_path) -> None:
    args = ade20k.parse_args(["--in_root", ade_tree[0], "--out_root", str(tmp_path / "out"),
                              "--progress_bar", "0"])
    assert (args.size_limit, args.hashes, args.compression) == (1 << 22, "sha1,xxh64", "")
    with pytest.raises(ValueError, match="Expected 20206, but got 2"):
        ade20k.main(args)
    assert not os.path.exists(tmp_path / "out")


@pytest.fixture
def coco_tree(tmp_path) -> tuple[str, dict[int, dict]]:
    """COCO-like ``val2017/`` plus annotations; img_id -> what its sample must hold."""
    root = tmp_path / "coco"
    images = [{"id": 7, "file_name": "a.jpg", "height": 10, "width": 12},
              {"id": 3, "file_name": "b.jpg", "height": 10, "width": 12},
              {"id": 9, "file_name": "c.jpg", "height": 10, "width": 12}]  # no boxes: left out
    pixels = {img["id"]: _image(str(root / "val2017" / img["file_name"]), img["id"])
              for img in images}
    anns = [{"id": 1, "image_id": 7, "bbox": [1.5, 2.0, 3.0, 4.0], "category_id": 18},
            {"id": 2, "image_id": 7, "bbox": [0.0, 0.0, 12.0, 10.0], "category_id": 5},
            {"id": 3, "image_id": 3, "bbox": [6.25, 1.0, 2.0, 2.5], "category_id": 5}]
    data = {"images": images, "annotations": anns,
            "categories": [{"id": 5, "name": "five"}, {"id": 18, "name": "dog"}]}
    (root / "annotations").mkdir()
    (root / "annotations" / "instances_val2017.json").write_text(json.dumps(data))
    f32 = np.float32
    expected = {
        7: {"pixels": pixels[7], "labels": [2, 1],
            "sizes": np.array([[1.5 / 12, 2 / 10, 4.5 / 12, 6 / 10], [0, 0, 1, 1]], f32)},
        3: {"pixels": pixels[3], "labels": [1],
            "sizes": np.array([[6.25 / 12, 1 / 10, 8.25 / 12, 3.5 / 10]], f32)}}
    return str(root), expected


def test_coco_round_trips_boxes_and_labels(coco_tree, tmp_path) -> None:
    in_root, expected = coco_tree
    out = str(tmp_path / "out")
    assert coco.convert_split(in_root, out, "val", progress_bar=False) == 2
    with StreamingCOCO(local=out, split="val", batch_size=1) as ds:
        samples = _all(ds)
    assert [s[1] for s in samples] == [7, 3]  # val keeps the file's order
    for img, img_id, size, sizes, labels in samples:
        want = expected[img_id]
        assert size == (10, 12)
        assert np.array_equal(np.asarray(img), want["pixels"])
        assert sizes.dtype == np.float32 and np.array_equal(sizes, want["sizes"])
        assert labels.dtype == np.int64 and labels.tolist() == want["labels"]
    with pytest.raises(FileNotFoundError, match="Images path does not exist"):
        coco.convert_split(in_root, str(tmp_path / "t"), "train")


def test_image_class_dataset_takes_numpy_labels_and_rejects_others(tmp_path) -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 255, (4, 5, 3), dtype=np.uint8) for _ in range(5)]
    dataset = [(Image.fromarray(a), np.int64(k % 3)) for k, a in enumerate(arrays)]
    out = str(tmp_path / "out")
    convert_image_class_dataset(dataset, out, "train", encoding="png", progress_bar=False)
    raw = StreamingDataset(local=out, split="train", batch_size=1)
    for n in range(5):
        sample = raw[n]
        assert np.array_equal(np.asarray(sample["x"]), arrays[sample["i"]])
        assert sample["y"] == sample["i"] % 3
    with pytest.raises(TypeError, match="Labels must be integers"):
        convert_image_class_dataset([(Image.fromarray(arrays[0]), "cat")], str(tmp_path / "b"),
                                    progress_bar=False)


def test_fake_cifar10_cli_writes_both_splits(tmp_path) -> None:
    out = str(tmp_path / "fake")
    done = _run("streaming.vision.convert.fake_cifar10", "--out", out, "--num_train", "6",
                "--num_val", "3")
    assert done.returncode == 0, done.stderr[-2000:]
    for split, count in (("train", 6), ("val", 3)):
        with StreamingCIFAR10(local=out, split=split, batch_size=1, transform=np.asarray) as ds:
            samples = _all(ds)
        assert len(samples) == count
        assert all(x.shape == (32, 32, 3) and 0 <= y <= 8 for x, y in samples)


def test_cifar10_without_torchvision_says_what_to_install(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.datasets", None)
    args = cifar10.parse_args(["--in_root", str(tmp_path), "--out_root", str(tmp_path / "o")])
    with pytest.raises(MissingDependencyError, match=r"pip install 'shardstream\[vision\]'"):
        cifar10.main(args)
    assert not os.path.exists(tmp_path / "o")


def test_cifar10_converts_what_torchvision_gives(monkeypatch, tmp_path) -> None:
    rng = np.random.default_rng(1)
    pixels = {True: rng.integers(0, 255, (4, 32, 32, 3), dtype=np.uint8),
              False: rng.integers(0, 255, (2, 32, 32, 3), dtype=np.uint8)}
    calls = []

    class FakeCIFAR10:
        def __init__(self, root: str, train: bool, download: bool) -> None:
            calls.append((root, train, download))
            self.data, self.train = pixels[train], train

        def __len__(self) -> int:
            return len(self.data)

        def __getitem__(self, i: int):
            return Image.fromarray(self.data[i]), i + (0 if self.train else 5)

    fake = types.ModuleType("torchvision.datasets")
    fake.CIFAR10 = FakeCIFAR10
    monkeypatch.setitem(sys.modules, "torchvision.datasets", fake)
    out = str(tmp_path / "out")
    cifar10.main(cifar10.parse_args(["--in_root", "raw", "--out_root", out, "--progress_bar",
                                     "0"]))
    assert calls == [("raw", True, True), ("raw", False, True)]
    for split, train in (("train", True), ("val", False)):
        raw = StreamingDataset(local=out, split=split, batch_size=1)
        for n in range(raw.num_samples):
            sample = raw[n]
            assert np.array_equal(np.asarray(sample["x"]), pixels[train][sample["i"]])
            assert sample["y"] == sample["i"] + (0 if train else 5)


def test_fake_cifar10_make_split_is_importable_api(tmp_path) -> None:
    fake_cifar10.make_split(str(tmp_path), "val", 4)
    assert StreamingDataset(local=str(tmp_path), split="val", batch_size=1).num_samples == 4


def test_the_reference_reads_our_vision_outputs(imagenet_tree, ade_tree, coco_tree,
                                                tmp_path) -> None:
    need_reference()
    root = tmp_path / "ours"
    imagenet.convert_split(imagenet_tree[0], str(root / "imagenet"), "val", progress_bar=False)
    ade20k.convert_split(ade_tree[0], str(root / "ade20k"), "train", progress_bar=False)
    coco.convert_split(coco_tree[0], str(root / "coco"), "val", progress_bar=False)
    specs = ["imagenet:val", "ade20k:train", "coco:val"]
    seen, forms = reference_reads(root, *specs), portable()
    for spec in specs:
        name, split = spec.split(":")
        ours = StreamingDataset(local=str(root / name), split=split, batch_size=1)
        theirs = seen[name]["get"]
        assert len(theirs) == ours.num_samples > 0
        for n, sample in enumerate(theirs):
            mine = ours[n]
            assert sorted(sample) == sorted(mine)
            for key, value in sample.items():
                if isinstance(value, dict) and value.get("format") == "JPEG":  # other libjpeg
                    got = np.asarray(forms.from_portable(value), float)
                    assert np.abs(got - np.asarray(mine[key], float)).mean() <= 4.0, spec
                else:
                    assert value == forms.to_portable(mine[key]), f"{spec} {n} {key}"
