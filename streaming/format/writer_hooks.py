"""The reference's writer hooks, for subclasses written against them.

Our writers encode a sample as pieces (`encode_parts`) and a shard as pieces
(`encode_joint_parts`), so nothing is joined twice. The reference's subclasses override the
whole-bytes hooks instead: `encode_sample`, `encode_joint_shard`, and some buffer samples
themselves (``self.new_samples.append(...)`` in their own `write`, read back in their own
`flush_shard`). `adapt_reference_hooks` makes such a subclass work as it did there: its hooks
are the ones called, and its buffer is a real list that `finish` flushes. Otherwise its overrides
would be skipped silently, or its samples never written.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BufferedSamples", "adapt_reference_hooks", "native", "own_buffer"]


class BufferedSamples:
    """`Writer.new_samples`: the buffered samples' encodings, rebuilt from the writer's pieces
    when read; a writer whose class buffers samples itself (`adapt_reference_hooks`) holds a
    plain list under the same name instead, which this (non-data) descriptor leaves alone."""

    def __get__(self, writer: Any, owner: type | None = None) -> Any:
        if writer is None:
            return self
        return writer.buffered_encodings()


def adapt_reference_hooks(cls: type) -> None:
    """Route a subclass's reference hooks (see the module docstring); called for every
    subclass of `Writer` as it is defined."""
    own = cls.__dict__
    for hook, pieces, adapter in (("encode_sample", "encode_parts", _parts_of_encode_sample),
                                  ("encode_joint_shard", "encode_joint_parts",
                                   _parts_of_encode_joint_shard)):
        if hook in own and pieces not in own:
            # The inherited whole-bytes hook (what `super().encode_sample(...)` reaches) keeps
            # the parent's pieces, or it would call the override back forever.
            parent = native(cls.__mro__[1], pieces)
            if getattr(parent, "__isabstractmethod__", False):  # nothing of ours to join
                parent = _nothing_to_join
            setattr(cls, f"_native_{pieces}", parent)
            setattr(cls, pieces, adapter)
    if "write" in own:  # its own `write` may buffer into `new_samples`, as the reference's do
        cls._own_buffer = True  # type: ignore[attr-defined]


def native(cls: type, pieces: str) -> Any:
    """The `pieces` method (``encode_parts``/``encode_joint_parts``) of our own that `cls`'s
    whole-bytes hooks join: the nearest one not routed to an override of the hook."""
    for klass in cls.__mro__:
        if f"_native_{pieces}" in klass.__dict__:
            return klass.__dict__[f"_native_{pieces}"]
        if pieces in klass.__dict__:
            return klass.__dict__[pieces]
    raise AttributeError(pieces)


def own_buffer(writer: Any) -> list[Any] | None:
    """The list a reference-style subclass buffers into, or None for our own buffering."""
    return writer.__dict__.get("new_samples")


def _parts_of_encode_sample(self: Any, sample: dict[str, Any]) -> tuple[list[Any], int]:
    data = self.encode_sample(sample)
    return [data], len(data)


def _parts_of_encode_joint_shard(self: Any) -> list[Any]:
    return [self.encode_joint_shard()]


def _nothing_to_join(self: Any, *args: Any) -> Any:
    raise NotImplementedError(f"{type(self).__name__} overrides a reference hook whose parent "
                              "has no encoding of its own to call.")
