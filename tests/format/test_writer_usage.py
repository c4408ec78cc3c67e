"""How users drive one writer: from several threads, dropped unfinished, with a bad value or a
bad column encoding; each says what happened and loses nothing it accepted."""

from __future__ import annotations

import gc
import json
import threading
import warnings

import numpy as np
import pytest

from streaming import LocalDataset
from streaming.format import JSONWriter, MDSWriter

THREADS, PER_THREAD = 8, 400


@pytest.mark.parametrize("kind", [MDSWriter, JSONWriter])
def test_several_threads_writing_to_one_writer_lose_nothing(tmp_path, kind) -> None:
    """It failed at `finish` with "duplicate files" (the reference wrote a corrupt index)."""
    out = str(tmp_path / "out")
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def feed(writer: MDSWriter | JSONWriter, part: int) -> None:
        try:
            start.wait()
            for i in range(part * PER_THREAD, (part + 1) * PER_THREAD):
                writer.write({"id": i, "text": "x" * (i % 37)})
        except BaseException as err:  # noqa: BLE001 (reported below)
            failures.append(err)

    with kind(out=out, columns={"id": "int", "text": "str"}, size_limit=2048) as writer:
        threads = [threading.Thread(target=feed, args=(writer, p)) for p in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
    assert len(writer.shards) > 10
    dataset = LocalDataset(out)
    rows = [dataset[i] for i in range(len(dataset))]
    assert sorted(int(r["id"]) for r in rows) == list(range(THREADS * PER_THREAD))
    assert all(r["text"] == "x" * (int(r["id"]) % 37) for r in rows)


def test_a_thread_writing_after_finish_is_refused(tmp_path) -> None:
    writer = MDSWriter(out=str(tmp_path / "out"), columns={"id": "int"})
    writer.write({"id": 1})
    thread = threading.Thread(target=writer.finish)
    thread.start()
    thread.join()
    with pytest.raises(RuntimeError, match="already finished"):
        writer.write({"id": 2})
    assert len(LocalDataset(str(tmp_path / "out"))) == 1


def test_a_bad_value_names_its_sample(tmp_path) -> None:
    with MDSWriter(out=str(tmp_path / "out"), columns={"id": "int", "a": "ndarray:int8:3"},
                   size_limit=256) as writer:
        for i in range(12):
            writer.write({"id": i, "a": np.zeros(3, np.int8)})
        with pytest.raises(ValueError, match="Column 'a'") as err:
            writer.write({"id": 12, "a": np.zeros(4, np.int8)})
        assert "(sample 12 of this writer, counting from 0)" in getattr(err.value, "__notes__",
                                                                       [])
    assert len(LocalDataset(str(tmp_path / "out"))) == 12  # what it accepted is all there


@pytest.mark.parametrize(("encoding", "why"), [
    ("ndarray:float99", "Unsupported dtype: float99. An ndarray's dtype is one of float16, "),
    ("ndarray:int8:3,x", "Bad shape '3,x'"),
    ("ndarray:int8:3:4", "Expected '<dtype>[:<d0>,<d1>,...]', got 'int8:3:4'"),
    ("intt", "No encoding is named 'intt'"),
    ("str:8", "'str' takes no ':' options"),
])
def test_a_bad_encoding_says_which_part_is_wrong(tmp_path, encoding, why) -> None:
    with pytest.raises(TypeError) as err:
        MDSWriter(out=str(tmp_path / "out"), columns={"x": encoding})
    text = str(err.value)
    assert text.startswith(f"MDSWriter passed column `x` with encoding `{encoding}` is "
                           f"unsupported. Supported encodings are {{'bytes', 'float16', ")
    assert f"({why}" in text
    listed = text[text.index("{") + 1:text.index("}")].replace("'", "").split(", ")
    assert listed == sorted(listed) and "ndarray" in listed


def test_a_writer_dropped_unfinished_warns(tmp_path) -> None:
    writer = MDSWriter(out=str(tmp_path / "out"), columns={"id": "int"})
    writer.write({"id": 1})
    with pytest.warns(ResourceWarning, match=r"dropped without finish\(\): 1 buffered sample"):
        del writer
        gc.collect()


@pytest.mark.parametrize("finished", [True, False])
def test_a_finished_or_unused_writer_dropped_is_quiet(tmp_path, finished) -> None:
    writer = MDSWriter(out=str(tmp_path / "out"), columns={"id": "int"})
    if finished:
        writer.write({"id": 1})
        writer.finish()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del writer
        gc.collect()


@pytest.mark.parametrize(("given", "stored", "dtype", "shape"), [
    ("ndarray:i4", "ndarray:int32", np.int32, (2, 3)),
    ("ndarray:<u2:2,3", "ndarray:uint16:2,3", np.uint16, (2, 3)),
    ("ndarray:f8:6", "ndarray:float64:6", np.float64, (6,)),
    ("ndarray:int32:2,3", "ndarray:int32:2,3", np.int32, (2, 3)),  # canonical: kept as given
])
def test_an_ndarray_dtype_alias_is_written_canonical(tmp_path, given, stored, dtype,
                                                     shape) -> None:
    # The reference reads an ndarray dtype by its canonical name only ('ndarray:i4' fails its
    # assert), so the index must name it so for the files to open there.
    values = [np.arange(6, dtype=dtype).reshape(shape) + i for i in range(3)]
    with MDSWriter(out=str(tmp_path), columns={"x": given}) as writer:
        for value in values:
            writer.write({"x": value})
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["shards"][0]["column_encodings"] == [stored]
    dataset = LocalDataset(local=str(tmp_path))
    for i, value in enumerate(values):
        got = dataset[i]["x"]
        assert got.dtype == np.dtype(dtype) and np.array_equal(got, value)


def test_values_the_reference_wrote_unreadably_or_leaked(tmp_path) -> None:
    """A masked array stores its fill value in the masked slots (as the reference's bytes), not
    the values hidden under the mask; `True` in a `str_int` column is stored as 1 (the
    reference wrote b'True', which no reader decodes)."""
    masked = np.ma.masked_array(np.array([1.0, 2.0, 3.0], np.float32), mask=[False, True, False])
    with MDSWriter(out=str(tmp_path), columns={"a": "ndarray:float32", "n": "str_int"}) as out:
        out.write({"a": masked, "n": True})
        out.write({"a": np.zeros(2, np.float32), "n": False})
    dataset = LocalDataset(local=str(tmp_path))
    assert dataset[0]["a"].tolist() == [1.0, np.float32(1e20), 3.0]
    assert (dataset[0]["n"], dataset[1]["n"]) == (1, 0)


def test_a_numpy_scalar_in_an_ndarray_column_is_a_value_error(tmp_path) -> None:
    with MDSWriter(out=str(tmp_path), columns={"a": "ndarray"}) as out:
        with pytest.raises(ValueError, match="Column 'a' .*scalar with NDArray encoding"):
            out.write({"a": np.int32(5)})
        out.write({"a": np.arange(3)})


def test_an_image_pillow_cannot_save_names_its_column(tmp_path) -> None:
    from PIL import Image

    with MDSWriter(out=str(tmp_path), columns={"img": "jpeg"}) as out:
        with pytest.raises(OSError, match="Column 'img' .jpeg.: cannot write mode RGBA as JPEG"):
            out.write({"img": Image.new("RGBA", (4, 4))})
