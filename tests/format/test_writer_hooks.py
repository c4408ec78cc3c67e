"""Writer subclasses written against the reference's hooks (`streaming.format.writer_hooks`):
their hooks are the ones called, and a subclass buffering samples itself loses none."""

from __future__ import annotations

import json
import os
from typing import Any

from streaming.base.format.base.writer import JointWriter
from streaming.format import MDSWriter, load_readers


class _LinesWriter(JointWriter):
    """A format of its own, written the reference's way: its `write` buffers whole samples in
    `new_samples` and its `flush_shard` writes them (the pattern of public custom writers)."""

    format = "jl"

    def __init__(self, *, out: str, rows_per_shard: int) -> None:
        super().__init__(out=out, size_limit=None)
        self.rows_per_shard = rows_per_shard

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def encode_joint_shard(self) -> bytes:
        raise NotImplementedError

    def write(self, sample: dict[str, Any]) -> None:
        if len(self.new_samples) == self.rows_per_shard:
            self.flush_shard()
            self._reset_cache()
        self.new_samples.append(sample)

    def flush_shard(self) -> None:
        raw, _ = self._name_next_shard()
        data = "".join(json.dumps(s) + "\n" for s in self.new_samples).encode()
        with open(os.path.join(self.local, raw), "wb") as file:
            file.write(data)
        self.shards.append({"samples": len(self.new_samples), "raw_data": self._hash(data, raw),
                            "zip_data": None, **self.get_config()})


def test_a_writer_buffering_samples_itself_writes_every_one(tmp_path: Any) -> None:
    """Its appends to `new_samples` went nowhere (a list rebuilt on each read), and its index
    listed no shard at all; it could not even be created (two abstract methods of ours)."""
    with _LinesWriter(out=str(tmp_path), rows_per_shard=4) as writer:
        for i in range(10):
            writer.write({"id": i})
    shards = json.load(open(tmp_path / "index.json"))["shards"]
    assert [shard["samples"] for shard in shards] == [4, 4, 2]
    lines = [json.loads(line) for shard in shards
             for line in open(tmp_path / shard["raw_data"]["basename"])]
    assert [line["id"] for line in lines] == list(range(10))


class _Upper(MDSWriter):
    calls = 0

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        type(self).calls += 1
        return super().encode_sample(dict(sample, text=sample["text"].upper()))


class _CountedShards(MDSWriter):
    calls = 0

    def encode_joint_shard(self) -> bytes:
        type(self).calls += 1
        return super().encode_joint_shard()


def test_overridden_encode_hooks_are_called(tmp_path: Any) -> None:
    """`MDSWriter` subclasses overriding `encode_sample` / `encode_joint_shard` (which call
    `super()`) were skipped silently: the data was written as if they did not exist."""
    with _Upper(out=str(tmp_path / "a"), columns={"text": "str"}) as writer:
        for i in range(3):
            writer.write({"text": f"abc{i}"})
    assert _Upper.calls == 3
    assert [s["text"] for r in load_readers(str(tmp_path / "a")) for s in r] == [
        "ABC0", "ABC1", "ABC2"]
    with _CountedShards(out=str(tmp_path / "b"), columns={"n": "int"}, size_limit=250) as writer:
        for i in range(10):
            writer.write({"n": i})
    shards = json.load(open(tmp_path / "b" / "index.json"))["shards"]
    assert _CountedShards.calls == len(shards) > 1
    assert [s["n"] for r in load_readers(str(tmp_path / "b")) for s in r] == list(range(10))


def test_our_writers_keep_their_own_paths(tmp_path: Any) -> None:
    """The adaptation is for subclasses that override the hooks; `MDSWriter` itself still
    buffers pieces, and `new_samples` reads them back as the reference's list of bytes."""
    writer = MDSWriter(out=str(tmp_path), columns={"n": "int"})
    writer.write({"n": 7})
    assert "new_samples" not in writer.__dict__
    assert writer.new_samples == [writer.encode_sample({"n": 7})]
    writer.finish()


class _CutEvery(MDSWriter):
    """Cuts shards its own way, counting `new_samples` before calling `super().write` (it
    read 0 while its samples went through our buffer)."""

    def __init__(self, *, rows: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows = rows

    def write(self, sample: dict[str, Any]) -> None:
        if len(self.new_samples) == self.rows:
            self.flush_shard()
            self._reset_cache()
        super().write(sample)


def test_new_samples_counts_and_reads_the_buffer(tmp_path: Any) -> None:
    with _CutEvery(out=str(tmp_path), columns={"n": "int"}, rows=3) as writer:
        for i in range(7):
            writer.write({"n": i})
        assert len(writer.new_samples) == 1 and writer.new_samples
        assert writer.new_samples == [writer.encode_sample({"n": 6})]
    shards = json.load(open(tmp_path / "index.json"))["shards"]
    assert [shard["samples"] for shard in shards] == [3, 3, 1]
    assert [s["n"] for r in load_readers(str(tmp_path)) for s in r] == list(range(7))


class _UpperMixin:
    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        return super().encode_sample(dict(sample, text=sample["text"].upper()))  # type: ignore[misc]


class _MixedIn(_UpperMixin, MDSWriter):
    pass


class _Bang(_Upper):
    """Our pieces hook over a class overriding the reference's hook: recursed forever."""

    def encode_parts(self, sample: dict[str, Any]) -> tuple[list[Any], int]:
        return super().encode_parts(dict(sample, text=sample["text"] + "!"))


class _ReferenceWrite(MDSWriter):
    """The reference's own `write`, copied into a subclass (to tweak the size policy), with
    our `flush_shard`: its samples were never written (shards of 0 samples)."""

    def write(self, sample: dict[str, Any]) -> None:
        data = self.encode_sample(sample)
        size = len(data) + self.extra_bytes_per_sample
        if self.size_limit and self.size_limit < self.new_shard_size + size:
            self.flush_shard()
            self._reset_cache()
        self.new_samples.append(data)
        self.new_shard_size += size


def test_hooks_from_a_mixin_a_mixed_hierarchy_and_a_copied_write(tmp_path: Any) -> None:
    def texts(out: str) -> list[str]:
        return [s["text"] for r in load_readers(out) for s in r]

    with _MixedIn(out=str(tmp_path / "a"), columns={"text": "str"}) as writer:
        writer.write({"text": "abc"})
    assert texts(str(tmp_path / "a")) == ["ABC"]  # the mixin's hook was skipped
    with _Bang(out=str(tmp_path / "b"), columns={"text": "str"}) as writer:
        writer.write({"text": "abc"})
    assert texts(str(tmp_path / "b")) == ["ABC!"]
    with _ReferenceWrite(out=str(tmp_path / "c"), columns={"text": "str"},
                         size_limit=250) as writer:
        for i in range(10):
            writer.write({"text": f"t{i}"})
    assert texts(str(tmp_path / "c")) == [f"t{i}" for i in range(10)]
    shards = json.load(open(tmp_path / "c" / "index.json"))["shards"]
    assert len(shards) > 1 and sum(shard["samples"] for shard in shards) == 10


def test_extra_bytes_declared_on_the_class_count_as_in_the_reference(tmp_path) -> None:
    """The reference's writers read their per-shard and per-sample extras from the class, so a
    subclass can declare them there (and code reads `MDSWriter.extra_bytes_per_sample`)."""
    from streaming.format import JSONWriter

    assert MDSWriter.extra_bytes_per_sample == 4 and JSONWriter.extra_bytes_per_sample == 0

    class PaddedJSONWriter(JSONWriter):
        extra_bytes_per_shard = 1000
        extra_bytes_per_sample = 100

    for writer, out in ((JSONWriter, tmp_path / "plain"), (PaddedJSONWriter, tmp_path / "pad")):
        with writer(out=str(out), columns={"x": "int"}, size_limit=2000) as w:
            for i in range(40):
                w.write({"x": i})
    shards = {out.name: [s["samples"] for s in json.loads((out / "index.json").read_text())
                         ["shards"]] for out in (tmp_path / "plain", tmp_path / "pad")}
    assert shards == {"plain": [40], "pad": [9, 9, 9, 9, 4]}  # the reference's split
