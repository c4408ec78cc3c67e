"""A stream's sampling weights as the reference shows them: `proportion`, `repeat`, `choose`.

The weights given to the constructor and those a dataset derives from them live in two
`StreamWeights` records on the stream; this mixin reads and sets them under the reference's
names (and its private `_proportion`...). The arithmetic is `streaming.order.weighting`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from streaming.order.weighting import StreamWeights, apply_weights, validate_weights

__all__ = ["WeightViews"]


class WeightViews:
    """`Stream`'s weights under the reference's names (see the module doc)."""

    given_weights: StreamWeights
    derived_weights: StreamWeights | None

    def _weight(self, name: str) -> Any:
        for weights in (self.derived_weights, self.given_weights):
            value = getattr(weights, name) if weights is not None else None
            if value is not None:
                return value
        raise AttributeError(f"This Stream has no `{name}`: none was given, and a "
                             "StreamingDataset derives it when built.")

    def _set_weight(self, name: str, value: Any) -> None:
        if self.derived_weights is not None:
            self.derived_weights = self.derived_weights._replace(**{name: value})
        else:
            self.given_weights = self.given_weights._replace(**{name: value})

    # As given (an int stays an int, as in the reference), or as derived by a dataset.
    @property
    def proportion(self) -> float:
        return self._weight("proportion")

    @proportion.setter
    def proportion(self, value: float) -> None:
        self._set_weight("proportion", value)

    @property
    def repeat(self) -> float:
        return self._weight("repeat")

    @repeat.setter
    def repeat(self, value: float) -> None:
        self._set_weight("repeat", value)

    @property
    def choose(self) -> int:
        return int(self._weight("choose"))

    @choose.setter
    def choose(self, value: int) -> None:
        self._set_weight("choose", value)

    @property
    def _proportion(self) -> float | None:
        """The constructor's value (the reference's private name)."""
        return self.given_weights.proportion

    @property
    def _repeat(self) -> float | None:
        return self.given_weights.repeat

    @property
    def _choose(self) -> int | None:
        return self.given_weights.choose

    @classmethod
    def validate_weights(cls, streams: Sequence[WeightViews]) -> tuple[bool, bool]:
        """Check the streams agree on a weighting kind: (is_proportional, is_unspecified)."""
        return validate_weights([stream.given_weights for stream in streams])

    @classmethod
    def apply_weights(cls, streams: Sequence[WeightViews], samples_per_stream: np.ndarray,
                      choose_per_epoch: int | None, seed: int) -> int:
        """Derive every stream's proportion, repeat and choose; return the epoch size.

        Records the derived weights on each stream (the reference sets them as attributes).
        """
        derived, epoch_size = apply_weights([stream.given_weights for stream in streams],
                                            samples_per_stream, choose_per_epoch, seed)
        for stream, weights in zip(streams, derived):
            stream.derived_weights = weights
        return epoch_size
