"""The reference's writer hooks, for subclasses written against them.

Our writers encode a sample as pieces (`encode_parts`) and a shard as pieces
(`encode_joint_parts`), so nothing is joined twice. The reference's subclasses override the
whole-bytes hooks instead (`encode_sample`, `encode_joint_shard`), and use its buffer,
`new_samples`: they count it (``len(self.new_samples)`` to cut shards their own way), read it
in their own `flush_shard`, or buffer samples into it themselves (``.append(...)`` in their own
`write`). `adapt_reference_hooks` routes the hooks, and `new_samples` is a live view of the
buffer (`SampleBuffer`) that takes appends, which `finish` flushes. Otherwise such overrides
would be skipped silently, or their samples never written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["BufferedSamples", "SampleBuffer", "adapt_reference_hooks", "native", "own_buffer",
           "take_appended"]


class SampleBuffer:
    """`new_samples` as the reference's list: the encodings of the samples `write` buffered,
    then whatever the writer's own code appended. Counting is O(1); reading materialises
    the encodings (which our writer keeps as pieces)."""

    __slots__ = ("_writer",)

    def __init__(self, writer: Any) -> None:
        self._writer = writer

    def _items(self) -> list[Any]:
        return self._writer.buffered_encodings() + self._writer._appended

    def __len__(self) -> int:
        return len(self._writer._sizes) + len(self._writer._appended)

    def __bool__(self) -> bool:
        return bool(len(self))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __getitem__(self, index: Any) -> Any:
        return self._items()[index]

    def __eq__(self, other: object) -> bool:
        return self._items() == list(other) if isinstance(other, (list, SampleBuffer)) else \
            NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a list is unhashable too

    def append(self, item: Any) -> None:
        self._writer._appended.append(item)

    def extend(self, items: Any) -> None:
        self._writer._appended.extend(items)

    def clear(self) -> None:
        self._writer._reset_cache()

    def __repr__(self) -> str:
        return repr(self._items())


class BufferedSamples:
    """`Writer.new_samples` (a non-data descriptor): a `SampleBuffer` over the writer's buffer,
    unless the writer's own code assigned a list of its own to the name, which then wins."""

    def __get__(self, writer: Any, owner: type | None = None) -> Any:
        if writer is None:
            return self
        return SampleBuffer(writer)


def adapt_reference_hooks(cls: type) -> None:
    """Route a subclass's reference hooks (see the module docstring); called for every
    subclass of `Writer` as it is defined. A hook counts wherever the class gets it from (its
    own body or a mixin), when it comes before our pieces method in the class's MRO."""
    mro = cls.__mro__
    for hook, pieces, adapter in (("encode_sample", "encode_parts", _parts_of_encode_sample),
                                  ("encode_joint_shard", "encode_joint_parts",
                                   _parts_of_encode_joint_shard)):
        hook_at, pieces_at = _provider(mro, hook), _provider(mro, pieces)
        if hook_at is None or pieces_at is None or hook_at >= pieces_at:
            continue  # ours, or already routed by a base class
        # The inherited whole-bytes hook (what `super().encode_sample(...)` reaches) keeps
        # the pieces of the classes after the override, or it would call it back forever.
        parent = native(cls, pieces, start=hook_at + 1)
        if getattr(parent, "__isabstractmethod__", False):  # nothing of ours to join
            parent = _nothing_to_join
        setattr(cls, f"_native_{pieces}", parent)
        setattr(cls, pieces, adapter)


def _provider(mro: tuple[type, ...], name: str) -> int | None:
    """Where in `mro` the attribute `name` is defined (None: nowhere)."""
    return next((i for i, klass in enumerate(mro) if name in vars(klass)), None)


def native(cls: type, pieces: str, start: int = 0) -> Any:
    """The `pieces` method (``encode_parts``/``encode_joint_parts``) that `cls`'s whole-bytes
    hooks join: one routed past an override of the hook wherever the MRO has one (a subclass
    overriding the pieces method itself must not be reached from below it again), else the
    first one from `start` on."""
    mro = cls.__mro__[start:]
    for klass in mro:
        if f"_native_{pieces}" in vars(klass):
            return vars(klass)[f"_native_{pieces}"]
    for klass in mro:
        if pieces in vars(klass):
            return vars(klass)[pieces]
    raise AttributeError(pieces)


def take_appended(writer: Any) -> None:
    """Move what the writer's own code appended to `new_samples` (the reference's `write`,
    copied into a subclass, appends each encoded sample) into the buffer our `flush_shard`
    writes.

    Raises:
        TypeError: an appended item is not an encoded sample (bytes): only the subclass's own
            `flush_shard` can write it.
    """
    appended = own_buffer(writer)
    for item in appended:
        if not isinstance(item, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"new_samples holds a {type(item).__name__}, but {type(writer).__name__}."
                "flush_shard writes encoded samples (bytes, from encode_sample): encode them "
                "before appending, or override flush_shard to write them.")
        writer._parts.append(item)
        writer._sizes.append(len(item))
    appended.clear()


def own_buffer(writer: Any) -> list[Any]:
    """What the writer's own code buffered (appended to `new_samples`, or a list it assigned to
    that name), for `finish` to flush."""
    assigned = writer.__dict__.get("new_samples")
    return assigned if assigned is not None else writer._appended


def _parts_of_encode_sample(self: Any, sample: dict[str, Any]) -> tuple[list[Any], int]:
    data = self.encode_sample(sample)
    return [data], len(data)


def _parts_of_encode_joint_shard(self: Any) -> list[Any]:
    return [self.encode_joint_shard()]


def _nothing_to_join(self: Any, *args: Any) -> Any:
    raise NotImplementedError(f"{type(self).__name__} overrides a reference hook whose parent "
                              "has no encoding of its own to call.")
