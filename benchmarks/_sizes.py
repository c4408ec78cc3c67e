"""The size options of a one-file benchmark, and the `--quick` that `make bench` passes to all."""

from __future__ import annotations

import argparse


def parse_sizes(doc: str, full: dict[str, int], quick: dict[str, int]) -> argparse.Namespace:
    """`--NAME` integer options defaulting to `full`'s values, and `--quick` for `quick`'s.

    Args:
        doc: the script's docstring (its first line describes the command).
        full: each option's name (`_` for `-`) and its default.
        quick: the values `--quick` sets instead (a subset of `full`).
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, default in full.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    shown = ", ".join(f"{name} {value:,}" for name, value in quick.items())
    parser.add_argument("--quick", action="store_true", help=f"smaller: {shown}")
    args = parser.parse_args()
    if args.quick:
        for name, value in quick.items():
            setattr(args, name, value)
    return args
