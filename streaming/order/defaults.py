"""Lazily resolved defaults and the constructor checks of the order-related arguments.

The reference decides `num_canonical_nodes` and `shuffle_block_size` at the first `__iter__` /
`state_dict` (when the world is known) and `predownload` at construction; these pure functions
make the same decisions, and the `check_*` functions raise the reference's errors verbatim.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from streaming.errors import NotAnIntegerError

__all__ = [
    "BATCHING_METHODS", "SAMPLING_METHODS", "SHUFFLE_BLOCK_SIZE", "add_batching_resolver",
    "algorithm", "check_batching_method", "check_epoch_size", "check_whole",
    "check_sampling_granularity", "check_sampling_method", "check_shuffle_block_size",
    "check_shuffle_seed", "is_whole",
    "resolve_num_canonical_nodes", "resolve_predownload", "resolve_shuffle_block_size",
    "user_batching",
]

SAMPLING_METHODS = ('balanced', 'fixed')
BATCHING_METHODS = ('random', 'stratified', 'per_stream', 'device_per_stream')

_Algo = TypeVar("_Algo")

# Asked in order for a batching method of the user's own (None: not theirs). The reference's
# table, `streaming.base.batching.batching_methods`, adds the one that serves what users put
# there: a function `(dataset, world, epoch, sample_in_epoch) -> ids` the dataset then calls.
_BATCHING_RESOLVERS: list[Callable[[str], Callable[..., Any] | None]] = []


def add_batching_resolver(resolver: Callable[[str], Callable[..., Any] | None]) -> None:
    """Let `resolver(name)` name a batching method of the user's own (added once)."""
    if resolver not in _BATCHING_RESOLVERS:
        _BATCHING_RESOLVERS.append(resolver)


def user_batching(name: str) -> Callable[..., Any] | None:
    """The user's own batching method called `name` (a new one, or one replacing ours), if any."""
    for resolve in _BATCHING_RESOLVERS:
        found = resolve(name)
        if found is not None:
            return found
    return None

#: Samples per shuffle block when nothing decides otherwise (the reference's).
SHUFFLE_BLOCK_SIZE = 1 << 18


def is_whole(value: Any) -> bool:
    """Whether `value` is an integer (a Python or numpy one), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_whole(value: Any, message: str) -> None:
    """Raises: NotAnIntegerError(message): `value` is a bool or not an integer."""
    if not is_whole(value):
        raise NotAnIntegerError(message)


def algorithm(table: Mapping[str, _Algo], name: str, argument: str) -> _Algo:
    """The algorithm `name` of `table`.

    Raises:
        KeyError: naming `argument` and the known names (a `KeyError`, as the reference's
            bare dict lookup, raised at the same moment).
    """
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"Unknown {argument} {name!r}; known: {', '.join(sorted(table))} (a "
                       "function of your own added to the reference's table must be added at "
                       "module level, not under `if __name__ == '__main__':`, so DataLoader "
                       "workers started with spawn or forkserver have it too)") from None


# Shuffles whose units are whole shards: they want many canonical nodes per physical node.
_SHARD_SHUFFLES = ('py1s', 'py2s')


def resolve_num_canonical_nodes(num_canonical_nodes: int | None, shuffle_algo: str,
                                num_physical_nodes: int) -> int:
    """`num_canonical_nodes`, or its default: 64 per physical node for py1s/py2s, else 1.

    A given value (any truthy one) is kept; `None` and 0 take the default.
    """
    if num_canonical_nodes:
        return num_canonical_nodes
    if shuffle_algo in _SHARD_SHUFFLES:
        return 64 * num_physical_nodes
    return num_physical_nodes


def resolve_shuffle_block_size(shuffle_block_size: int | None,
                               num_canonical_nodes: int | None) -> int:
    """`shuffle_block_size`, or its default `max(4_000_000 // ncn, 1 << 18)` (`1 << 18` if no
    ncn)."""
    if shuffle_block_size is not None:
        return shuffle_block_size
    if num_canonical_nodes is None:
        return SHUFFLE_BLOCK_SIZE
    return max(4_000_000 // num_canonical_nodes, SHUFFLE_BLOCK_SIZE)


def resolve_predownload(predownload: int | None, batch_size: int | None) -> int | None:
    """`predownload`, or its default `8 * batch_size` (64 without a batch size).

    Warns (UserWarning) when a given `predownload` is below `batch_size`.
    """
    if predownload is not None and batch_size is not None and predownload < batch_size:
        warnings.warn(f'predownload < batch_size ({predownload} < {batch_size}).This may result '
                      f'in slower batch time. Recommendation is to set predownload to at-least '
                      f'batch_size.', stacklevel=2)
        return predownload
    if predownload is None:
        return 8 * batch_size if batch_size is not None else 64
    return predownload


# Shuffles that cut the epoch into blocks of `shuffle_block_size` samples.
_BLOCK_SHUFFLES = ('py1b', 'py1br', 'py1e')


def check_shuffle_block_size(shuffle: bool, shuffle_algo: str, shuffle_block_size: Any) -> None:
    """Checked when an epoch is planned (the reference's moment; it may be resolved lazily).

    Raises:
        TypeError: shuffling with a block size that is not an int (the reference's check).
        ValueError: a block shuffle with a block size below 1 (numpy's "high <= 0" in the
            reference, or an endless range).
    """
    if not shuffle:
        return
    if not isinstance(shuffle_block_size, int):
        raise TypeError(f'Dataset `shuffle_block_size` must be an integer. Got '
                        f'{type(shuffle_block_size)} instead.')
    if shuffle_algo in _BLOCK_SHUFFLES and shuffle_block_size < 1:
        raise ValueError(f'`shuffle_block_size` must be a positive number of samples for '
                         f'shuffle_algo {shuffle_algo!r}, but got: {shuffle_block_size}.')


def check_sampling_method(sampling_method: str) -> None:
    """Raises: ValueError: not `balanced` or `fixed`."""
    if sampling_method not in SAMPLING_METHODS:
        raise ValueError(f'Invalid sampling method: {sampling_method}. Must be one of `balanced` '
                         f'or `fixed`.')


def check_sampling_granularity(sampling_granularity: int) -> None:
    """Raises: ValueError: not positive."""
    if sampling_granularity <= 0:
        raise ValueError(f'`sampling_granularity` must be a positive integer, but got: '
                         f'{sampling_granularity}.')


def check_batching_method(batching_method: str) -> None:
    """Raises: ValueError: not one of the four batching methods (nor one of the user's)."""
    if batching_method not in BATCHING_METHODS and user_batching(batching_method) is None:
        raise ValueError(f'Invalid batching method: {batching_method}. Must be one of `random`, '
                         f'`stratified`, `per_stream`, or `device_per_stream`.')


def check_shuffle_seed(shuffle_seed: int) -> None:
    """Raises: ValueError: negative."""
    if shuffle_seed < 0:
        raise ValueError(f'`shuffle_seed` must be a non-negative integer, but got: '
                         f'{shuffle_seed}.')


def check_epoch_size(epoch_size: int | None) -> int | None:
    """An already-parsed `epoch_size` (None and 0 both mean "not given" and become None).

    Raises:
        ValueError: negative.
    """
    if not epoch_size:
        return None
    if epoch_size < 0:
        raise ValueError(f'Epoch size cannot be negative. Received {epoch_size}.')
    return epoch_size
