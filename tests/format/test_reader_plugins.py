"""A shard format of the user's own, registered the reference's way (`_readers[...] = cls`,
a `JointReader` subclass building itself in `from_json` and reading in `get_item`)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from streaming import StreamingDataset
from streaming.base.format import _readers
from streaming.base.format.base.reader import FileInfo, JointReader


class _LinesReader(JointReader):
    def __init__(self, dirname: str, split: str | None, compression: str | None,
                 hashes: list[str], raw_data: FileInfo, samples: int,
                 size_limit: int | None, zip_data: FileInfo | None) -> None:
        super().__init__(dirname, split, compression, hashes, raw_data, samples, size_limit,
                         zip_data)
        self._rows: list[dict[str, Any]] | None = None

    @classmethod
    def from_json(cls, dirname: str, split: str | None, obj: dict[str, Any]) -> _LinesReader:
        args = {k: v for k, v in obj.items() if k not in ("version", "format")}
        args.update(raw_data=FileInfo(**obj["raw_data"]), zip_data=None)
        return cls(dirname, split, **args)

    def decode_sample(self, data: bytes) -> dict[str, Any]:
        raise NotImplementedError

    def get_sample_data(self, idx: int) -> bytes:
        raise NotImplementedError

    def get_item(self, idx: int) -> dict[str, Any]:
        if self._rows is None:
            path = os.path.join(self.dirname, self.split or "", self.raw_data.basename)
            self._rows = [json.loads(line) for line in open(path)]
        return self._rows[idx]


@pytest.fixture
def lines_format() -> Any:
    _readers["jl"] = _LinesReader
    yield
    del _readers["jl"]


def test_a_registered_reader_of_the_users_own_reads(tmp_path: Any, lines_format: Any) -> None:
    """It failed with "Unsupported data format: jl. Expected to be ``" (its `from_json` was
    bypassed), or, with a `format` attribute, as an abstract class (`_load`)."""
    shards = []
    for k in range(3):
        rows, name = range(4 * k, min(10, 4 * k + 4)), f"shard.{k:05}.jl"
        data = "".join(json.dumps({"id": i}) + "\n" for i in rows)
        (tmp_path / name).write_text(data)
        shards.append({"version": 2, "format": "jl", "compression": None, "hashes": [],
                       "size_limit": None, "samples": len(rows), "zip_data": None,
                       "raw_data": {"basename": name, "bytes": len(data), "hashes": {}}})
    (tmp_path / "index.json").write_text(json.dumps({"version": 2, "shards": shards}))
    dataset = StreamingDataset(local=str(tmp_path), batch_size=2)
    assert [sample["id"] for sample in dataset] == list(range(10))
    assert dataset[7] == {"id": 7}
