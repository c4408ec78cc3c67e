"""Stream weights: derive every stream's (proportion, repeat, choose) and the epoch size.

The logic behind the reference's `Stream.validate_weights` / `Stream.apply_weights` (spec §4.3)
on plain values: a weight that is `None` is "not given" (the reference tests `hasattr`). The
caller (`Stream`) stores the results back on its objects. Pure numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from streaming.order.rng import run_rng

__all__ = ["StreamWeights", "apply_weights", "check_stream_weights", "validate_weights"]


class StreamWeights(NamedTuple):
    """One stream's weight: at most one given by the user, all three after `apply_weights`."""

    proportion: float | None = None
    repeat: float | None = None
    choose: int | None = None


def check_stream_weights(proportion: float | None, repeat: float | None,
                         choose: int | None) -> None:
    """The `Stream` constructor's checks on its weight arguments.

    Raises:
        ValueError: more than one weight given, or a negative one, or one that is not a finite
            number (the reference takes `inf` and `nan`, then fails deep in the epoch's plan or
            plans garbage).
    """
    given = (proportion is not None) + (repeat is not None) + (choose is not None)
    if given > 1:
        raise ValueError('At most one of `proportion`, `repeat`, and `choose` may be specified; '
                         'the others are derived')
    for name, value in (('proportion', proportion), ('repeat', repeat), ('choose', choose)):
        if value is not None and value < 0:
            raise ValueError(f'`{name}` must be non-negative')
        if value is not None and not math.isfinite(value):
            raise ValueError(f'`{name}` must be a finite number, got {value}')


def validate_weights(weights: Sequence[StreamWeights]) -> tuple[bool, bool]:
    """Whether streams are weighted relatively, and whether no stream has any weight.

    Relative (proportion) iff stream 0 has a proportion; every stream must then have one.

    Raises:
        ValueError: a stream with several weights, or relative and absolute weights mixed.
    """
    is_proportional = weights[0].proportion is not None
    is_unspecified = True
    for stream_id, weight in enumerate(weights):
        has = [value is not None for value in weight]
        if sum(has) > 1:
            raise ValueError(f'Streams must provide at most one of `proportion`, `repeat`, or '
                             f'`choose` (error in stream {stream_id})')
        if is_proportional != has[0]:
            raise ValueError(f'Relative (`proportion`) and absolute (`repeat`, `choose`, none) '
                             f'stream weights are incompatible with each other (error in stream '
                             f'{stream_id})')
        if any(has):
            is_unspecified = False
    return is_proportional, is_unspecified


def _split(epoch_size: int, proportions: NDArray[np.float64], seed: int) -> NDArray[np.int64]:
    """Truncated shares of `epoch_size`, the shortfall spread one each over random streams.

    Generator calls: `run_rng(seed).choice(num_streams, shortfall, False)`.
    """
    total = proportions.sum()
    if total == 0 or np.isnan(total):
        # The reference divides by zero and then fails (or, for 2 streams, silently goes wrong)
        # drawing the shortfall; always fail, with its message.
        raise ValueError(f"Cannot take a larger sample than population when replace is False: "
                         f"the streams' proportions {proportions.tolist()} sum to {total}; give "
                         f"at least one stream a positive proportion.")
    proportions /= total
    choose = (epoch_size * proportions).astype(np.int64)
    shortfall = epoch_size - choose.sum()
    choose[run_rng(seed).choice(len(proportions), shortfall, False)] += 1
    return choose


def apply_weights(weights: Sequence[StreamWeights], samples_per_stream: NDArray[np.int64],
                  epoch_size: int | None, seed: int) -> tuple[list[StreamWeights], int]:
    """Every stream's derived weights and the epoch size (samples per epoch, all streams).

    Args:
        weights: What each stream was given, as `StreamWeights` or plain
            `(proportion, repeat, choose)` tuples with None for "not given".
        samples_per_stream: Underlying samples of each stream.
        epoch_size: Requested samples per epoch, if any (only with relative or no weights).
        seed: The dataset's shuffle seed (used to place the rounding shortfall).

    Returns:
        Per stream `(proportion, repeat, choose)` as numpy float64/float64/int64 scalars (what
        the reference stores on its `Stream` objects), and the epoch size as an int.

    Raises:
        ValueError: see `validate_weights`; `epoch_size` with absolute weights; proportions that
            sum to zero.
    """
    weights = [StreamWeights(*weight) for weight in weights]
    relative, unspecified = validate_weights(weights)
    samples_per_stream = np.asarray(samples_per_stream, np.int64)
    with np.errstate(divide='ignore', invalid='ignore'):
        if relative or (unspecified and epoch_size):
            if relative:
                epoch_size = epoch_size or int(samples_per_stream.sum())
                proportions = np.array([w.proportion for w in weights], np.float64)
            else:
                proportions = samples_per_stream.astype(np.float64)
            choose = _split(int(epoch_size or 0), proportions, seed)
            repeat = choose / samples_per_stream
        else:
            if epoch_size:
                raise ValueError('Only provide `choose` when weighting streams relatively')
            choose = np.zeros(len(weights), np.int64)
            for stream_id, weight in enumerate(weights):
                if weight.repeat is not None:
                    choose[stream_id] = int(weight.repeat * samples_per_stream[stream_id])
                elif weight.choose is not None:
                    choose[stream_id] = weight.choose
                else:
                    choose[stream_id] = samples_per_stream[stream_id]
            repeat = choose / samples_per_stream
            proportions = choose / choose.sum()
            epoch_size = int(choose.sum())
    derived = [StreamWeights(*values) for values in zip(proportions, repeat, choose)]
    assert epoch_size is not None  # every branch above settles it
    return derived, int(epoch_size)
