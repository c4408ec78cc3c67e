"""The contract every MDS column encoding fulfils (value <-> bytes).

Owns only the abstract shape of an encoding and the error for a malformed encoding string; the
registry lives in `encodings/registry.py` and the concrete encodings in family files (scalars,
text, arrays, images, serialized, lists). Imports numpy only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol, cast

import numpy as np

from streaming.errors import StreamingError


class EncodingConfigError(StreamingError, ValueError, AssertionError):
    """An encoding string or constructor argument that names no valid encoding.

    The reference signals these with bare `assert`s (`NDArray('foo')`, `ndarray::3`), so this is
    also an `AssertionError` for code written against it; new code should catch `ValueError`.
    """


class Encoding(ABC):
    """Turns one column value into bytes and back.

    Subclasses set `size` (bytes per value when fixed, else None). Encodings whose values are
    fixed-size numbers also set `fixed_dtype` (little-endian numpy dtype) and `fixed_shape`, which
    lets readers decode a whole column of a shard at once as a strided, zero-copy view: a wrong
    None only costs that fast path, never correctness. The three may be class or instance
    attributes (an `ndarray:<dtype>:<shape>` instance knows its own). `struct_code` is the
    `struct` format character of a value whose `decode` is exactly ``struct.unpack('<' + code)``
    (a Python-native number), so a reader may decode several such values in one call.

    Abstract, as the reference's: a subclass that forgets `encode` or `decode` fails when it is
    instantiated (registered), not at the first sample written or read.
    """

    size: int | None = None
    fixed_dtype: np.dtype | None = None
    fixed_shape: tuple[int, ...] | None = None
    struct_code: str | None = None

    @abstractmethod
    def encode(self, obj: Any) -> bytes:
        """The bytes of `obj`."""

    @abstractmethod
    def decode(self, data: bytes) -> Any:
        """The value of `data`.

        An encoding of this package also takes a read-only `memoryview` of a shard (and says
        so in its signature); one registered by a user gets `bytes`, as in the reference
        (`reading_views` adapts it).
        """

    def decode_many(self, rows: np.ndarray) -> Any:
        """Decode `n` fixed-size values at once.

        Args:
            rows: uint8 array of shape (n, size), possibly a strided read-only view of a shard.

        Returns:
            An iterable (consumed once, in order) whose i-th item equals
            `decode(rows[i].tobytes())`.
        """
        return [self.decode(row.tobytes()) for row in rows]

    @staticmethod
    def _validate(data: Any, expected_type: Any) -> None:
        if not isinstance(data, expected_type):
            raise AttributeError(
                f"data should be of type {expected_type}, but instead, found as {type(data)}"
            )


def typed_rows(rows: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Reinterpret (n, size) uint8 rows as (n, size // itemsize) values, without copying.

    Works on strided views of a shard as long as each row is contiguous (the last axis has stride
    1), which is how a fixed-size column sits inside MDS samples.
    """
    try:
        return rows.view(dtype)
    except ValueError:  # a row is not contiguous: pay one copy rather than fail
        return np.ascontiguousarray(rows).view(dtype)


class ViewDecoder(Protocol):
    """An encoding as the MDS reader drives it: `decode` takes a read-only view of the shard's
    bytes as well as `bytes` (no copy per value)."""

    size: int | None
    fixed_dtype: np.dtype | None
    fixed_shape: tuple[int, ...] | None
    struct_code: str | None

    def decode(self, data: bytes | memoryview) -> Any: ...

    def decode_many(self, rows: np.ndarray) -> Any: ...


class _GivenBytes:
    """A user's encoding behind the reader: its `decode` gets `bytes`, as the reference's docs
    write it (`data.decode()`, `json.loads(data)`, or `return data` kept past the shard's
    mapping), never a view of the shard."""

    def __init__(self, inner: Encoding) -> None:
        self.inner = inner
        self.size = inner.size
        # A subclass of one of ours that overrides `decode` inherits shortcuts that stand for
        # the decoding it replaced: a struct code, a whole-column `decode_many` and the dtype
        # that lets readers skip `decode`. Only those defined with its `decode` are kept.
        own = _defining_class(inner, "decode")
        many = _defining_class(inner, "decode_many")
        self._many = many is own or many is Encoding
        self.fixed_dtype = inner.fixed_dtype if self._many else None
        self.fixed_shape = inner.fixed_shape if self._many else None
        vetted = _defining_class(inner, "struct_code") is own
        self.struct_code = inner.struct_code if vetted else None

    def decode(self, data: bytes | memoryview) -> Any:
        return self.inner.decode(data if type(data) is bytes else bytes(data))

    def decode_many(self, rows: np.ndarray) -> Any:
        if self._many:
            return self.inner.decode_many(rows)
        return [self.inner.decode(row.tobytes()) for row in rows]


def _defining_class(obj: object, attr: str) -> type | None:
    """The class of `obj`'s MRO that defines `attr` (None: only the instance has it)."""
    return next((k for k in type(obj).__mro__ if attr in vars(k)), None)


def reading_views(coder: Encoding) -> ViewDecoder:
    """`coder` as the reader may call it with views: this package's encodings take them as they
    are; any other (a user's, or a user's subclass of ours) gets `bytes`."""
    if type(coder).__module__.startswith("streaming."):
        return cast(ViewDecoder, coder)
    return _GivenBytes(coder)
