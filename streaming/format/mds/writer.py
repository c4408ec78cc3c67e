"""`MDSWriter`: samples -> MDS shards (``shard.NNNNN.mds``), byte-identical to the reference.

Shard layout: uint32 sample count, (n+1) uint32 absolute offsets, the writer config as sorted
JSON, then the samples; a sample is one uint32 length per variable-size column followed by the
column payloads, columns in sorted-name order. Encoding goes through a per-column plan built
once, so the per-sample loop does no name parsing or registry lookups.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from streaming.errors import UnsupportedColumnError
from streaming.format.encodings import get_encoding, get_mds_encodings
from streaming.format.sample_checks import VALUE_ERRORS, column_value_error
from streaming.format.writer import MAX_OFFSET
from streaming.format.writer_args import SIZE_LIMIT
from streaming.format.writer_layouts import JointWriter, uint32_offsets

__all__ = ["MDSWriter"]

_UINT32 = struct.Struct("<I")


class _Column(NamedTuple):
    name: str
    encode: Callable[[Any], bytes]
    size: int | None  # fixed bytes per value, or None for variable-size columns
    encoding: str


def plan_columns(columns: dict[str, str]) -> list[_Column]:
    """Check every column's encoding and return the encoding plan in sorted-name order.

    Raises:
        UnsupportedColumnError: the reference's message for an unsupported encoding (a
            `TypeError`, and an `AssertionError` as the reference's for a malformed one).
    """
    plan = []
    for name in sorted(columns):
        encoding = columns[name]
        try:
            coder = get_encoding(encoding)
        except ValueError as err:  # the reference's message, then which part is wrong
            known = ", ".join(repr(known) for known in sorted(get_mds_encodings()))
            why = str(err).split(". ", 1)[1] if ". " in str(err) else ""
            raise UnsupportedColumnError(
                f"MDSWriter passed column `{name}` with encoding `{encoding}` is unsupported. "
                f"Supported encodings are {{{known}}}" + (f" ({why})" if why else "")
            ) from None
        stored = getattr(coder, "stored_name", None)  # (a dtype alias, written canonical)
        plan.append(_Column(name, coder.encode, coder.size,
                            encoding if stored is None else stored(encoding)))
    return plan


class MDSWriter(JointWriter):
    """Writes a streaming MDS dataset.

    Args:
        columns: column name -> MDS encoding string (``'int'``, ``'ndarray:uint16:1024'``...).
        out: local directory, remote URL, or ``(local, remote)``.
        keep_local: with a remote, keep local files after upload.
        compression: optional ``algo[:level]``.
        hashes: optional sorted list of hash algorithms.
        size_limit: shard size budget in bytes or human units; None for a single shard.
        **kwargs: ``progress_bar``, ``max_workers``, ``retry``, ``exist_ok``.
    """

    format = "mds"
    extra_bytes_per_sample = 4  # each sample's entry in the offsets table (a subclass may say more)

    def __init__(self, *, columns: dict[str, str], out: str | tuple[str, str],
                 keep_local: bool = False, compression: str | None = None,
                 hashes: list[str] | None = None, size_limit: int | str | None = SIZE_LIMIT,
                 **kwargs: Any) -> None:
        plan = plan_columns(columns)  # before any directory is touched
        super().__init__(out=out, keep_local=keep_local, compression=compression, hashes=hashes,
                         size_limit=size_limit,
                         extra_bytes_per_sample=self.extra_bytes_per_sample,
                         **kwargs)
        self.columns = columns
        self.column_names = [column.name for column in plan]
        self.column_encodings = [column.encoding for column in plan]
        self.column_sizes = [column.size for column in plan]
        self.config_data = json.dumps(self.get_config(), sort_keys=True).encode("utf-8")
        # sample count + the extra final offset + the embedded config
        self.extra_bytes_per_shard = 4 + 4 + len(self.config_data)
        self._plan = plan
        num_variable = sum(column.size is None for column in plan)
        self._head = struct.Struct(f"<{num_variable}I") if num_variable else None
        self._reset_cache()

    def get_config(self) -> dict[str, Any]:
        obj = super().get_config()
        obj.update(column_names=self.column_names, column_encodings=self.column_encodings,
                   column_sizes=self.column_sizes)
        return obj

    def encode_parts(self, sample: dict[str, Any]) -> tuple[list[Any], int]:
        """Encode one sample as ``[length header, column payloads...]`` and its byte size.

        Raises:
            KeyError: a column is missing from the sample, or a fixed-size column's value
                encodes to the wrong length (the reference's message).
        """
        parts: list[Any] = [b""]
        lengths = []
        total = 0
        for name, encode, size, encoding in self._plan:
            value = sample[name]
            # QUIRK kept (mds_encode): bytes are taken as already encoded, for any encoding.
            try:
                data = value if isinstance(value, bytes) else encode(value)
            except VALUE_ERRORS as err:
                raise column_value_error(err, name, encoding) from err
            length = len(data)
            if size is None:
                lengths.append(length)
            elif length != size:
                raise KeyError(
                    f"Unexpected data size; was this data typed with the correct encoding "
                    f"({encoding})?"
                )
            parts.append(data)
            total += length
        if self._head is None:
            return parts[1:], total
        if total > MAX_OFFSET:  # a value past uint32 (no header holds it): `write` refuses
            return parts, total + 4 * len(lengths)  # the sample, saying why (`_check_fits`)
        parts[0] = self._head.pack(*lengths)
        return parts, total + 4 * len(lengths)

    def encode_joint_parts(self) -> list[Any]:
        num_samples = len(self._sizes)
        header_size = 4 + 4 * (num_samples + 1) + len(self.config_data)
        header = (_UINT32.pack(num_samples) + uint32_offsets(self._sizes, header_size)
                  + self.config_data)
        return [header, *self._parts]
