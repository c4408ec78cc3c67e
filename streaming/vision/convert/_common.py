"""What the domain conversion scripts (vision and text) share: their common command-line flags,
an optional-dependency import that says what to install, and a progress bar that honours
``--leave``.

The flags keep the reference's spellings and per-script defaults, so command lines written for
MosaicML Streaming's scripts run unchanged against ours.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from argparse import ArgumentParser, Namespace
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any

from streaming.errors import MissingDependencyError
from streaming.format.mds.writer import MDSWriter
from streaming.progress import Progress, make_progress
from streaming.units import get_list_arg

__all__ = ["add_writer_flags", "import_optional", "progress_for", "run_published_splits",
           "write_samples", "writer_compression"]


def add_writer_flags(parser: ArgumentParser, *, compression: str, size_limit: int,
                     in_root: bool = True, progress: bool = True) -> None:
    """Add ``--in_root --out_root --compression --hashes --size_limit [--progress_bar --leave]``.

    Each script passes its own defaults (they differ per dataset, as in the reference).
    """
    if in_root:
        parser.add_argument("--in_root", type=str, required=True,
                            help="Local directory of the raw input dataset")
    parser.add_argument("--out_root", type=str, required=True,
                        help="Directory (or remote URL) to write the MDS dataset to")
    parser.add_argument("--compression", type=str, default=compression,
                        help=f"Shard compression, empty for none. Default: {compression!r}")
    parser.add_argument("--hashes", type=str, default="sha1,xxh64",
                        help="Comma-separated hashes recorded per shard. Default: sha1,xxh64")
    parser.add_argument("--size_limit", type=int, default=size_limit,
                        help=f"Bytes per shard before starting a new one. Default: {size_limit}")
    if progress:
        parser.add_argument("--progress_bar", type=int, default=1,
                            help="Show a progress bar (1) or not (0). Default: 1")
        parser.add_argument("--leave", type=int, default=0,
                            help="Keep the finished progress bar on screen (1) or not (0). "
                                 "Default: 0")


def writer_compression(compression: str | None) -> str | None:
    """The command line's empty string means no compression, as the writer's None does."""
    return compression or None


def import_optional(module: str, user: str, install: str) -> ModuleType:
    """`module`, imported on demand.

    Raises:
        MissingDependencyError: naming `user` (the script) and the pip command.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(
            f"{user} needs {module.split('.')[0]}, which is not installed: pip install {install}"
        ) from err


@contextlib.contextmanager
def progress_for(enabled: bool | int, total: int | None, leave: bool | int = False,
                 desc: str | None = None, unit: str = "sample") -> Iterator[Progress]:
    """A ``progress(n)`` callable as `streaming.progress.make_progress` gives, whose tqdm bar
    (when `enabled`) stays on screen only when `leave` asks for it, as the scripts' flag says."""
    if not enabled or leave:
        with make_progress(bool(enabled), total, unit=unit, desc=desc) as progress:
            yield progress
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=unit, unit_scale=True, desc=desc, file=sys.stderr,
              dynamic_ncols=True, leave=False) as bar:
        with make_progress(bar.update, total) as progress:
            yield progress


def write_samples(out: str, columns: Mapping[str, str], samples: Iterable[dict[str, Any]],
                  total: int, *, compression: str | None, hashes: list[str] | None,
                  size_limit: int, progress_bar: bool | int, leave: bool | int,
                  desc: str | None) -> None:
    """Write `samples` as one MDS dataset at `out`, under one progress bar of `total`."""
    with MDSWriter(out=out, columns=dict(columns), compression=writer_compression(compression),
                   hashes=list(hashes or []), size_limit=size_limit,
                   progress_bar=bool(progress_bar)) as writer, \
            progress_for(progress_bar, total, leave, desc=desc) as progress:
        for sample in samples:
            writer.write(sample)
            progress(1)


def run_published_splits(convert_split: Callable[..., int],
                         splits: Mapping[str, tuple[int, bool]], args: Namespace) -> None:
    """Convert each split of a published dataset in turn, checked against its sample count
    (`splits`: name -> (samples, shuffle)), with the script's command-line options."""
    for split, (expected, shuffle) in splits.items():
        convert_split(args.in_root, args.out_root, split, shuffle=shuffle,
                      expected_num_samples=expected, compression=args.compression,
                      hashes=get_list_arg(args.hashes), size_limit=args.size_limit,
                      progress_bar=bool(args.progress_bar), leave=bool(args.leave))
