"""`MDSReader.read_columns`: samples gathered as columns, from shards of one layout and from
shards whose variable-size values (text, ragged arrays) move every later column.

Whatever the layout, the columns hold exactly what `get_item` decodes for the same indices (any
order, repeats allowed): fixed-size numbers as one array, everything else as a list. A sample
whose lengths do not add up raises `ShardFormatError` naming the shard, as `get_item` does.
"""

from __future__ import annotations

import numpy as np
import pytest
from formats_support import datasets, same, scratch_dir
from hypothesis import given, settings, strategies as st

from streaming.errors import ShardFormatError
from streaming.format import MDSWriter, load_readers
from streaming.format.mds.gather import takeable


def _expected(reader, indices: list[int]) -> dict:
    """The columns `read_columns` must give: `get_item` sample by sample, stacked as arrays
    where the column is gathered whole."""
    samples = [reader.get_item(i) for i in indices]
    columns = {}
    for column in reader._plan():
        values = [sample[column.name] for sample in samples]
        if column.size is not None and takeable(column.coder, column.size):
            shape = (len(values), *(column.coder.fixed_shape or ()))
            values = np.array(values, column.coder.fixed_dtype).reshape(shape)
        columns[column.name] = values
    return columns


@pytest.mark.filterwarnings("ignore:A sample of")
@settings(max_examples=60, deadline=None)
@given(datasets(), st.data())
def test_columns_are_what_get_item_decodes(data: tuple, draw: st.DataObject) -> None:
    columns, samples = data
    if not samples:
        return
    with scratch_dir() as out:
        with MDSWriter(columns=columns, out=out, size_limit=None, exist_ok=True) as writer:
            for sample in samples:
                writer.write(sample)
        reader = load_readers(out)[0]
        indices = draw.draw(st.lists(st.integers(0, len(samples) - 1), min_size=1,
                                     max_size=40))
        got = reader.read_columns(np.array(indices, np.int64))
        want = _expected(reader, indices)
        assert list(got) == list(want)
        for name in want:
            assert same(got[name], want[name]), (name, got[name], want[name])


def _write_ragged(out: str, n: int = 30) -> None:
    columns = {"id": "int", "text": "str", "v": "ndarray:float32:3", "t": "ndarray:uint16"}
    with MDSWriter(columns=columns, out=out) as writer:
        for i in range(n):
            writer.write({"id": i, "text": "é" * (i % 4), "v": np.full(3, i / 2, np.float32),
                          "t": np.arange(i % 5 + 1, dtype=np.uint16)})


def test_fixed_columns_of_ragged_samples_are_arrays(tmp_path) -> None:
    _write_ragged(str(tmp_path))
    reader = load_readers(str(tmp_path))[0]
    got = reader.read_columns(np.array([7, 2, 7, 29], np.int64))
    assert got["id"].dtype == np.int64 and got["id"].tolist() == [7, 2, 7, 29]
    assert got["v"].shape == (4, 3) and got["v"].dtype == np.float32
    assert got["v"][:, 0].tolist() == [3.5, 1.0, 3.5, 14.5]
    assert got["id"].flags.writeable and got["v"].flags.writeable  # copies, not views
    assert got["text"] == ["ééé", "éé", "ééé", "é"]
    assert [t.tolist() for t in got["t"]] == [[0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1, 2, 3, 4]]


def _corrupt_header(tmp_path, value: int) -> None:
    """Sample 3's first length set to `value` (its bytes no longer add up)."""
    path = tmp_path / "shard.00000.mds"
    data = bytearray(path.read_bytes())
    start = int.from_bytes(data[4 + 4 * 3:8 + 4 * 3], "little")
    data[start:start + 4] = value.to_bytes(4, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("value", [2, 10**6])
def test_lengths_that_do_not_add_up_name_the_shard(tmp_path, value: int) -> None:
    _write_ragged(str(tmp_path))
    _corrupt_header(tmp_path, value)
    reader = load_readers(str(tmp_path))[0]
    assert reader.read_columns(np.array([1, 2], np.int64))["id"].tolist() == [1, 2]
    with pytest.raises(ShardFormatError, match=r"shard\.00000\.mds.*holds \d+ bytes"):
        reader.read_columns(np.array([1, 3], np.int64))
    with pytest.raises(ShardFormatError):
        reader.get_item(3)


def _write_mixed(out: str, n: int) -> None:
    columns = {"id": "int", "s": "str", "b": "bytes", "f": "float32", "u": "uint8",
               "v": "ndarray:int16:2", "t": "ndarray:uint16", "j": "json", "k": "str_int"}
    with MDSWriter(columns=columns, out=out) as writer:
        for i in range(n):
            writer.write({"id": i, "s": "ü" * (i % 7), "b": bytes(i % 5), "f": np.float32(i / 3),
                          "u": np.uint8(i % 256), "v": np.array([i, -i], np.int16),
                          "t": np.arange(i % 4 + 1, dtype=np.uint16), "j": {"i": [i] * (i % 3)},
                          "k": 10**20 + i})


def test_in_order_blocks_of_ragged_samples_decode_as_get_item(tmp_path) -> None:
    _write_mixed(str(tmp_path), 300)
    reader = load_readers(str(tmp_path))[0]
    want = [reader.get_item(i) for i in range(300)]
    assert same(list(reader), want)
    assert same(list(reader.iter_range(37, 250)), want[37:250])
    assert same(list(reader.iter_range(250, 260)), want[250:260])  # a short run


def test_in_order_read_of_a_bad_sample_yields_those_before_it(tmp_path) -> None:
    _write_mixed(str(tmp_path), 300)
    reader = load_readers(str(tmp_path))[0]
    want = [reader.get_item(i) for i in range(100)]
    path = tmp_path / "shard.00000.mds"
    data = bytearray(path.read_bytes())
    start = int.from_bytes(data[4 + 4 * 100:8 + 4 * 100], "little")
    data[start:start + 4] = (10**6).to_bytes(4, "little")  # sample 100's first length
    path.write_bytes(bytes(data))
    reader = load_readers(str(tmp_path))[0]
    got = []
    with pytest.raises(ShardFormatError, match=r"shard\.00000\.mds"):
        for sample in reader:
            got.append(sample)
    assert same(got, want)
