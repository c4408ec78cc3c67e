"""Small helpers that exist because the reference's public surface has them.

Owns `wait_for_file_to_exist` and `get_import_exception_message` (re-exported by
`streaming.base.util`), `EpochCursor` (the reference's `_Iterator`: one worker's progress through
an epoch, shared with helper threads) and the old constructor defaults of the domain datasets.
Imports only the standard library, so `streaming.base.util` stays cheap.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from streaming.order.defaults import SHUFFLE_BLOCK_SIZE

__all__ = [
    "LEGACY_DOMAIN_DEFAULTS",
    "EpochCursor",
    "core_arguments",
    "get_import_exception_message",
    "wait_for_file_to_exist",
]

# The StreamingDataset arguments every domain dataset (`streaming.vision`, `.text`,
# `.multimodal`) accepts, with the defaults those classes kept from older releases. They differ
# from StreamingDataset's own (`relaxed`, `py1e`, a block size derived from the node count), and
# the sample order depends on them, so they must not drift.
LEGACY_DOMAIN_DEFAULTS: dict[str, Any] = {
    "remote": None,
    "local": None,
    "split": None,
    "download_retry": 2,
    "download_timeout": 60,
    "validate_hash": None,
    "keep_zip": False,
    "epoch_size": None,
    "predownload": None,
    "cache_limit": None,
    "partition_algo": "orig",
    "num_canonical_nodes": None,
    "batch_size": None,
    "shuffle": False,
    "shuffle_algo": "py1s",
    "shuffle_seed": 9176,
    "shuffle_block_size": SHUFFLE_BLOCK_SIZE,
}


def core_arguments(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The StreamingDataset arguments out of a domain constructor's `locals()`.

    Lets each domain class spell out its full signature (what users and IDEs see) while passing
    exactly the shared arguments on, without repeating them a second time.
    """
    return {name: namespace[name] for name in LEGACY_DOMAIN_DEFAULTS}


def wait_for_file_to_exist(filename: str, poll_interval: float, timeout: float,
                           err_msg: str) -> None:
    """Block until `filename` exists, checking every `poll_interval` seconds.

    Unlike the reference it checks before the first sleep and returns as soon as the file is
    there (our writers publish files atomically, so there is no half-written file to wait out).

    Raises:
        RuntimeError: `err_msg` followed by ``'<timeout> < <elapsed> secs.'`` once `timeout`
            seconds have passed without the file appearing.
    """
    start = time.monotonic()
    while not os.path.exists(filename):
        elapsed = time.monotonic() - start
        if elapsed > timeout:
            raise RuntimeError(f"{err_msg}{timeout:.3f} < {elapsed:.3f} secs.")
        time.sleep(poll_interval)


def get_import_exception_message(package_name: str, extra_deps: str) -> str:
    """The message for an optional feature whose packages are missing.

    Args:
        package_name: the feature, which is also the name of the pip extra that installs it.
        extra_deps: accepted for the reference's signature; the message does not use it.
    """
    del extra_deps
    return (f"Streaming was installed without {package_name} support. To use {package_name} "
            f"related packages with Streaming, run `pip install 'shardstream[{package_name}]'`.")


class EpochCursor:
    """One worker's position in its epoch, shared between the consumer and helper threads.

    The reference exposed this as `streaming.base.dataset._Iterator` to subclasses that run work
    ahead of the consumer. Indices only grow: ``0 <= yield_index <= prepare_index <= total``.
    Helper threads poll `should_exit()` and call `on_exit()` when they stop; `exit()` asks them
    to stop and waits for all of them.

    Args:
        sample_ids: the worker's sample ids in yield order.
        num_threads: how many helper threads will call `on_exit()`.
    """

    def __init__(self, sample_ids: Sequence[int] | np.ndarray, num_threads: int = 1) -> None:
        self.sample_ids = sample_ids
        self.total = len(sample_ids)
        self.prepare_index = 0
        self.ready_index = 0
        self.yield_index = 0
        self.eviction_index = 0
        self._stop = threading.Event()
        self._running = num_threads
        self._exited = threading.Condition()

    def should_exit(self) -> bool:
        """Whether helper threads should stop (the epoch ended or was abandoned)."""
        return self._stop.is_set()

    def non_blocking_exit(self) -> None:
        """Ask helper threads to stop without waiting for them."""
        self._stop.set()

    def exit(self, timeout: float | None = None) -> bool:
        """Ask helper threads to stop and wait for them; False if `timeout` ran out first."""
        self._stop.set()
        with self._exited:
            return self._exited.wait_for(lambda: self._running <= 0, timeout)

    def on_exit(self) -> None:
        """Called by a helper thread as its last action."""
        with self._exited:
            self._running -= 1
            self._exited.notify_all()
