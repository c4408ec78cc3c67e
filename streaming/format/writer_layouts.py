"""Which files a shard has: one self-describing file (`JointWriter`, MDS) or a data file plus
a meta file of sample offsets (`SplitWriter`, JSONL and CSV/TSV). Everything else a writer does
is `streaming.format.writer.Writer`'s."""

from __future__ import annotations

import json
import struct
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from streaming.format.writer import Writer
from streaming.format.writer_args import SIZE_LIMIT
from streaming.format.writer_hooks import native, take_appended

__all__ = ["JointWriter", "SplitWriter", "uint32_offsets"]

_UINT32 = struct.Struct("<I")


def uint32_offsets(sizes: Sequence[int], start: int) -> bytes:
    """``start`` followed by the running sum of `sizes` from it, as little-endian uint32 bytes."""
    offsets = np.empty(len(sizes) + 1, np.int64)
    offsets[0] = start
    np.cumsum(np.asarray(sizes, np.int64), out=offsets[1:])
    offsets[1:] += start
    return offsets.astype("<u4").tobytes()



class JointWriter(Writer):
    """A writer whose shards are one self-describing file each (MDS)."""

    @abstractmethod
    def encode_joint_parts(self) -> list[Any]:
        """The buffered samples laid out as one shard file, as pieces to concatenate."""

    def encode_joint_shard(self) -> bytes:
        """The buffered samples laid out as one shard file (reference API)."""
        return b"".join(native(type(self), "encode_joint_parts")(self))

    def flush_shard(self) -> None:
        self._check_sink()
        take_appended(self)
        raw_name, zip_name = self._name_next_shard()
        raw_info, zip_info = self._process_file(self.encode_joint_parts(), raw_name, zip_name)
        entry = {"samples": len(self._sizes), "raw_data": raw_info, "zip_data": zip_info}
        entry.update(self.get_config())
        self.shards.append(entry)


class SplitWriter(Writer):
    """A writer whose shards are a data file plus a meta file of sample offsets (JSONL, XSV).

    Only the data lines count against `size_limit`: no per-shard or per-sample extras, unless
    a subclass sets these class attributes (as the reference's subclasses may).
    """

    extra_bytes_per_shard = 0
    extra_bytes_per_sample = 0

    def __init__(self, *, out: str | tuple[str, str], keep_local: bool = False,
                 compression: str | None = None, hashes: list[str] | None = None,
                 size_limit: int | str | None = SIZE_LIMIT, **kwargs: Any) -> None:
        super().__init__(out=out, keep_local=keep_local, compression=compression, hashes=hashes,
                         size_limit=size_limit, extra_bytes_per_shard=self.extra_bytes_per_shard,
                         extra_bytes_per_sample=self.extra_bytes_per_sample, **kwargs)

    def data_header(self) -> bytes:
        """Bytes at the start of every data file, before the first sample (XSV's header)."""
        return b""

    def encode_split_shard(self) -> tuple[bytes, bytes]:
        """The buffered samples as ``(data file, meta file)`` bytes (reference API)."""
        data, meta = self._split_parts()
        return b"".join(data), meta

    def _split_parts(self) -> tuple[list[Any], bytes]:
        header = self.data_header()
        config = json.dumps(self.get_config(), sort_keys=True).encode("utf-8")
        meta = _UINT32.pack(len(self._sizes)) + uint32_offsets(self._sizes, len(header)) + config
        return [header, *self._parts], meta

    def flush_shard(self) -> None:
        self._check_sink()
        take_appended(self)
        raw_data_name, zip_data_name = self._name_next_shard()
        raw_meta_name, zip_meta_name = self._name_next_shard("meta")
        data, meta = self._split_parts()
        raw_data, zip_data = self._process_file(data, raw_data_name, zip_data_name)
        raw_meta, zip_meta = self._process_file([meta], raw_meta_name, zip_meta_name)
        entry = {"samples": len(self._sizes), "raw_data": raw_data, "zip_data": zip_data,
                 "raw_meta": raw_meta, "zip_meta": zip_meta}
        entry.update(self.get_config())
        self.shards.append(entry)
