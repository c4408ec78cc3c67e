"""Which local files a conversion reads: files, folders (searched recursively) and globs,
each file once."""

from __future__ import annotations

import glob
import os
import warnings
from collections.abc import Sequence

from streaming.convert.columns import ConversionError
from streaming.storage.urls import scheme_of

__all__ = ["expand_sources"]


def expand_sources(src: str | Sequence[str], extensions: Sequence[str]) -> list[str]:
    """Input files from a file, a directory (searched recursively), a glob, or a list of those.

    A file named twice (a glob and its folder, or listed twice) is converted once, where it
    is first named, with a warning: its rows would otherwise be written twice.

    Raises:
        ConversionError: nothing matched, or a remote URL was given (inputs are local).
    """
    found: list[str] = []
    for item in [src] if isinstance(src, (str, os.PathLike)) else src:
        item = os.fspath(item)
        if scheme_of(item) and not item.startswith("file://"):
            raise ConversionError(
                f"Input {item!r} is a URL: conversion reads local files (copy them down first, "
                "or read them with Spark, Dask or Ray and their converters).")
        item = item.removeprefix("file://")
        if os.path.isdir(item):
            found += sorted(
                os.path.join(root, name) for root, _, names in os.walk(item) for name in names
                if name.lower().endswith(tuple(extensions)))
        elif os.path.isfile(item):
            found.append(item)
        else:
            found += sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p))
    if not found:
        raise ConversionError(f"No input files ({', '.join(extensions)}) found in {src!r}.")
    seen: set[str] = set()
    unique = []
    for path in found:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append(path)
    if len(unique) < len(found):
        warnings.warn(f"{len(found) - len(unique)} input file(s) were named more than once (a "
                      "glob and its folder, or the same file twice); each is converted once.",
                      stacklevel=2)
    return unique
