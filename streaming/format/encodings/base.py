"""The contract every MDS column encoding fulfils (value <-> bytes).

Owns only the abstract shape of an encoding; the registry lives in `encodings/__init__.py` and the
concrete encodings in family files (scalars, text, arrays, images, serialized, lists).
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np


class Encoding:
    """Turns one column value into bytes and back.

    Subclasses set `size` (bytes per value when fixed, else None). Encodings whose values are
    fixed-size numbers also set `fixed_dtype` (little-endian numpy dtype) and `fixed_shape`, which
    lets readers decode a whole column of a shard at once as a strided, zero-copy view: a wrong
    None only costs that fast path, never correctness.
    """

    size: ClassVar[int | None] = None
    fixed_dtype: ClassVar[np.dtype | None] = None
    fixed_shape: ClassVar[tuple[int, ...] | None] = None

    def encode(self, obj: Any) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes | memoryview) -> Any:
        raise NotImplementedError

    def decode_many(self, rows: np.ndarray) -> Sequence[Any]:
        """Decode `n` fixed-size values at once.

        Args:
            rows: uint8 array of shape (n, size), possibly a strided read-only view of a shard.

        Returns:
            A sequence whose i-th item equals `decode(rows[i].tobytes())`.
        """
        return [self.decode(row.tobytes()) for row in rows]

    @staticmethod
    def _validate(data: Any, expected_type: Any) -> None:
        if not isinstance(data, expected_type):
            raise AttributeError(
                f"data should be of type {expected_type}, but instead, found as {type(data)}"
            )
