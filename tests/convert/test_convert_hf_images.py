"""Hugging Face datasets, Arrow/pandas tables and image folders to MDS."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np
import pytest
from PIL import Image

pa = pytest.importorskip("pyarrow")

from streaming.convert import hf_to_mds, imagefolder_to_mds, table_to_mds  # noqa: E402
from streaming.convert.columns import ConversionError  # noqa: E402
from tests.convert.convert_helpers import read_back  # noqa: E402


def _image_bytes(fmt: str, shade: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 6), (shade, 0, 0)).save(out, format=fmt)
    return out.getvalue()


def test_hf_dataset_with_image_label_and_sequence_features(tmp_path: Any) -> None:
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({
        "img": datasets.Image(), "label": datasets.ClassLabel(names=["a", "b"]),
        "ids": datasets.Sequence(datasets.Value("int32")), "text": datasets.Value("string")})
    images = [_image_bytes("PNG", 10 * i) for i in range(6)]
    ds = datasets.Dataset.from_dict({
        "img": [{"bytes": b, "path": None} for b in images], "label": [0, 1] * 3,
        "ids": [[i, i + 1] for i in range(6)], "text": [f"t{i}" for i in range(6)]},
        features=features)
    result = hf_to_mds(ds, str(tmp_path / "out"), num_workers=0, rows_per_task=4)
    assert result.samples == 6 and result.partitions == ["part-00000", "part-00001"]
    samples = read_back(str(tmp_path / "out"))
    assert samples[5]["img"].format == "PNG" and samples[5]["img"].getpixel((0, 0)) == (50, 0, 0)
    assert int(samples[5]["label"]) == 1 and samples[5]["ids"].tolist() == [5, 6]
    splits = hf_to_mds(datasets.DatasetDict({"train": ds, "test": ds.select(range(2))}),
                       str(tmp_path / "dict"), num_workers=0, include=["text"])
    assert splits["test"].samples == 2
    assert read_back(str(tmp_path / "dict" / "test")) == [{"text": "t0"}, {"text": "t1"}]


def test_arrow_and_pandas_tables(tmp_path: Any) -> None:
    pd = pytest.importorskip("pandas")
    table = pa.table({"x": np.arange(5, dtype=np.float32), "s": list("abcde")})
    table_to_mds(table, str(tmp_path / "arrow"), num_workers=0, rows_per_task=2)
    assert [s["s"] for s in read_back(str(tmp_path / "arrow"))] == list("abcde")
    table_to_mds(pd.DataFrame({"n": [1, 2]}), str(tmp_path / "pandas"), num_workers=0)
    assert read_back(str(tmp_path / "pandas")) == [{"n": 1}, {"n": 2}]
    with pytest.raises(ConversionError, match="Cannot convert a int"):
        table_to_mds(3, str(tmp_path / "bad"))


def test_image_folder_keeps_bytes_and_reencodes_the_odd_file(tmp_path: Any) -> None:
    root = tmp_path / "imgs"
    for cls, shade in (("cat", 1), ("dog", 2)):
        (root / cls / "sub").mkdir(parents=True)
        for i in range(3):
            (root / cls / f"{i}.jpg").write_bytes(_image_bytes("JPEG", 40 * shade + i))
    (root / "dog" / "sub" / "odd.png").write_bytes(_image_bytes("PNG", 200))
    (root / "dog" / "notes.txt").write_text("not an image")
    with pytest.warns(UserWarning, match="1 of 7 images are not JPEG files and will be "
                      "re-encoded as JPEG .the format most files have."):
        result = imagefolder_to_mds(str(root), str(tmp_path / "out"), num_workers=0,
                                    files_per_task=3)
    assert result.details["classes"] == ["cat", "dog"] and result.samples == 7
    samples = read_back(str(tmp_path / "out"))
    assert [int(s["y"]) for s in samples] == [0, 0, 0, 1, 1, 1, 1]
    assert all(s["x"].format == "JPEG" for s in samples)  # the PNG was re-encoded
    first = (root / "cat" / "0.jpg").read_bytes()
    with open(tmp_path / "out" / "part-00000" / "shard.00000.mds", "rb") as file:
        assert first in file.read()  # stored byte for byte, not re-encoded
    with pytest.raises(ConversionError, match="No images"):
        imagefolder_to_mds(str(tmp_path / "out"), str(tmp_path / "x"))
    assert not os.path.exists(tmp_path / "x")


def test_image_folder_refuses_an_empty_class_and_an_output_inside_it(tmp_path: Any) -> None:
    """An output inside the image folder became a class of its next conversion (`--exist-ok`),
    and every class after it shifted its label; an empty class folder did the same."""
    root = tmp_path / "imgs"
    for cls in ("cat", "dog"):
        (root / cls).mkdir(parents=True)
        (root / cls / "0.jpg").write_bytes(_image_bytes("JPEG", 10))
    with pytest.raises(ConversionError, match="is inside the input folder"):
        imagefolder_to_mds(str(root), str(root / "aout"), num_workers=0)
    assert not os.path.exists(root / "aout")
    (root / "bird").mkdir()
    with pytest.raises(ConversionError, match=r"without images .*: bird\. Every subfolder"):
        imagefolder_to_mds(str(root), str(tmp_path / "out"), num_workers=0)
    (root / "bird").rmdir()
    result = imagefolder_to_mds(str(root), str(tmp_path / "out"), num_workers=0)
    assert result.details["classes"] == ["cat", "dog"]


def test_image_folder_refuses_a_file_that_is_not_an_image(tmp_path: Any) -> None:
    """A file named .jpg that holds text used to be stored as it was (its name matched the
    column): the conversion passed and training crashed on that sample later."""
    root = tmp_path / "imgs"
    (root / "cat").mkdir(parents=True)
    (root / "cat" / "0.jpg").write_bytes(_image_bytes("JPEG", 10))
    (root / "cat" / "broken.jpg").write_text("not an image at all")
    with pytest.raises(ConversionError, match=r"broken\.jpg: cannot read as an image"):
        imagefolder_to_mds(str(root), str(tmp_path / "out"), num_workers=0)


def test_image_folder_goes_by_the_bytes_not_the_name(tmp_path: Any) -> None:
    """A PNG named .jpg in a jpeg column is re-encoded as JPEG (stored as it was, it would
    not be what the column says); a real JPEG stays byte for byte."""
    root = tmp_path / "imgs"
    (root / "cat").mkdir(parents=True)
    real = _image_bytes("JPEG", 10)
    (root / "cat" / "0.jpg").write_bytes(real)
    (root / "cat" / "1.jpg").write_bytes(_image_bytes("PNG", 20))
    imagefolder_to_mds(str(root), str(tmp_path / "out"), num_workers=0, files_per_task=10)
    samples = read_back(str(tmp_path / "out"))
    assert [s["x"].format for s in samples] == ["JPEG", "JPEG"]
    with open(tmp_path / "out" / "shard.00000.mds", "rb") as file:
        data = file.read()
    assert real in data and b"\x89PNG" not in data


@pytest.mark.parametrize(("files", "workers", "parts"), [(5, 0, 0), (5, 2, 0), (200, 2, 4)])
def test_image_folder_tasks_are_never_a_handful_of_images(tmp_path: Any, files: int,
                                                          workers: int, parts: int) -> None:
    """A small folder used to become one sub-dataset (folder, index, shard) per image or two."""
    root = tmp_path / "imgs"
    (root / "cat").mkdir(parents=True)
    data = _image_bytes("JPEG", 10)
    for i in range(files):
        (root / "cat" / f"{i:03}.jpg").write_bytes(data)
    result = imagefolder_to_mds(str(root), str(tmp_path / "out"), num_workers=workers)
    assert result.samples == files
    assert len(list((tmp_path / "out").glob("part-*"))) == parts
    assert len(read_back(str(tmp_path / "out"))) == files


def test_hf_errors_name_the_row_of_the_input_and_iterable_datasets_say_why(
        tmp_path: Any) -> None:
    """With several tasks, a bad row was named by its place in its task ("row 0" for row 5);
    a streaming dataset failed with a bare "object of type 'IterableDataset' has no len()"."""
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"n": [0, 1, 2, 3, 4, None, 6, 7]},
                                    features=datasets.Features({"n": datasets.Value("int64")}))
    with pytest.raises(ConversionError, match="row 5 is null"):
        hf_to_mds(ds, str(tmp_path / "out"), num_workers=0, rows_per_task=4,
                  columns={"n": "int64"})
    with pytest.raises(ConversionError, match="IterableDataset .* streaming=True"):
        hf_to_mds(ds.to_iterable_dataset(), str(tmp_path / "it"), num_workers=0)
