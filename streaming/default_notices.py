"""The INFO lines saying which lazy default a dataset chose, as the reference logs them.

Code and tests written for the reference look for "Because `<argument>` was not specified," in
its log to confirm a default took effect; the rest of each line is ours. Logged by the first
worker of each rank only (one line per rank, not one per DataLoader worker).
"""

from __future__ import annotations

import logging

from streaming.order.plan import Resolution

__all__ = ["notice_lazy_defaults", "notice_predownload"]

log = logging.getLogger("streaming.dataset")


def _because(argument: str, rest: str) -> None:
    log.info("Because `%s` was not specified, %s", argument, rest)


def notice_predownload() -> None:
    """At construction, when `predownload` was left to its default."""
    _because("predownload", "each worker reads ahead 8 batches (8 * batch_size samples), or 64 "
                            "samples without a batch size.")


def notice_lazy_defaults(before: Resolution, after: Resolution, shuffle_algo: str) -> None:
    """At the first epoch (or state dict): the values `resolve_epoch` chose for the unset ones."""
    if before.num_canonical_nodes is None and shuffle_algo not in ("py1s", "py2s"):
        _because("num_canonical_nodes", f"it is the number of physical nodes "
                                        f"({after.num_canonical_nodes}), as shuffle_algo is "
                                        f"{shuffle_algo!r} (py1s and py2s take 64 per node).")
    if before.shuffle_block_size is None:
        _because("shuffle_block_size", f"it is max(4_000_000 // num_canonical_nodes, 1 << 18) = "
                                       f"{after.shuffle_block_size}.")
