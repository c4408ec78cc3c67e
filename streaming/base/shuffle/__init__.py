"""Old import path `streaming.base.shuffle`: aliases of `streaming.order.shuffle`."""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.base.shuffle import naive, py1b, py1br, py1e, py1s, py2s
from streaming.order.shuffle import (
    algos,
    get_shuffle,
    get_shuffle_naive,
    get_shuffle_py1b,
    get_shuffle_py1br,
    get_shuffle_py1e,
    get_shuffle_py1s,
    get_shuffle_py2s,
)

__all__ = [
    "algos",
    "get_shuffle",
    "get_shuffle_naive",
    "get_shuffle_py1b",
    "get_shuffle_py1br",
    "get_shuffle_py1e",
    "get_shuffle_py1s",
    "get_shuffle_py2s",
    "naive",
    "py1b",
    "py1br",
    "py1e",
    "py1s",
    "py2s",
]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
