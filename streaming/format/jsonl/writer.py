"""`JSONWriter`: samples -> JSON-lines shards (``shard.NNNNN.json`` + ``.json.meta``).

Each sample is ``json.dumps({listed columns}, sort_keys=True) + newline``; the meta file holds
the sample count, (n+1) uint32 offsets from 0, and the writer config. Byte-identical to the
reference.
"""

from __future__ import annotations

import json
from typing import Any

from streaming.format.jsonl.encodings import _encodings, is_json_encoded
from streaming.format.sample_checks import check_text_columns, column_value_error
from streaming.format.writer_args import SIZE_LIMIT
from streaming.format.writer_layouts import SplitWriter

__all__ = ["JSONWriter"]


class JSONWriter(SplitWriter):
    """Writes a streaming JSON-lines dataset.

    Args:
        columns: column name -> ``'str'``, ``'int'`` or ``'float'``; only these keys are written.
        newline: line terminator appended to every sample.
        out: local directory, remote URL, or ``(local, remote)``.
        keep_local: with a remote, keep local files after upload.
        compression: optional ``algo[:level]``.
        hashes: optional sorted list of hash algorithms.
        size_limit: shard size budget (data lines only) in bytes or human units.
        **kwargs: ``progress_bar``, ``max_workers``, ``retry``, ``exist_ok``.
    """

    format = "json"

    def __init__(self, *, columns: dict[str, str], newline: str = "\n",
                 out: str | tuple[str, str], keep_local: bool = False,
                 compression: str | None = None, hashes: list[str] | None = None,
                 size_limit: int | str | None = SIZE_LIMIT, **kwargs: Any) -> None:
        check_text_columns("JSONWriter", columns, _encodings)
        if not isinstance(newline, str):
            raise TypeError(f"JSONWriter's newline must be a str, got {newline!r}.")
        super().__init__(out=out, keep_local=keep_local, compression=compression, hashes=hashes,
                         size_limit=size_limit, **kwargs)
        self.columns = columns
        self.newline = newline
        self._plan = list(columns.items())

    def encode_parts(self, sample: dict[str, Any]) -> tuple[list[Any], int]:
        """One JSON line of the listed columns (AttributeError on a wrongly typed value)."""
        obj = {}
        for name, encoding in self._plan:
            value = sample[name]
            try:
                is_json_encoded(encoding, value)
            except AttributeError as err:
                raise column_value_error(err, name, encoding) from err
            obj[name] = value
        data = (json.dumps(obj, sort_keys=True) + self.newline).encode("utf-8")
        return [data], len(data)

    def get_config(self) -> dict[str, Any]:
        obj = super().get_config()
        obj.update(columns=self.columns, newline=self.newline)
        return obj
