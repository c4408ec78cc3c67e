"""The `streaming` command line: convert, inspect, validate, head, merge-index, bench, plan, clean.

It sits on top of the library (which never imports it) and needs click, from the ``cli`` extra.
Without click, `main` prints the install command instead of failing with a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]

INSTALL_HINT = "pip install 'shardstream[cli]'"


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line (console entry point ``streaming``, also ``python -m streaming``)."""
    try:
        import click  # noqa: F401 - only checking that the extra is installed
    except ImportError:
        print(f"The streaming command line needs click: {INSTALL_HINT}", file=sys.stderr)
        sys.exit(1)
    from streaming.cli.app import cli

    cli.main(args=list(argv) if argv is not None else None, prog_name="streaming")
