"""The `streaming` command line: convert, inspect, validate, head, merge-index, bench, plan, clean.

It sits on top of the library (which never imports it) and needs click, from the ``cli`` extra.
Without click, `main` prints the install command instead of failing with a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]

INSTALL_HINT = "pip install 'shardstream[cli]'"


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line (console entry point ``streaming``, also ``python -m streaming``)."""
    try:
        import click  # noqa: F401 - only to say how to install it
    except ImportError:
        print(f"The streaming command line needs click: {INSTALL_HINT}", file=sys.stderr)
        sys.exit(1)
    from streaming.cli.app import cli

    # SIGTERM (what `timeout`, Kubernetes and Slurm send) ends a command as Ctrl-C does: its
    # cleanup runs (worker processes stopped, a conversion's partial output removed). Its
    # default action ended this process at once, and the workers went on without it.
    # Restored on the way out, for callers that run `main` in their own process (tests).
    previous = (signal.signal(signal.SIGTERM, _terminated)
                if threading.current_thread() is threading.main_thread() else None)
    # click's standalone mode, but with 130 for Ctrl-C (it exits 1, our code for bad data).
    try:
        code = _run(cli, argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    sys.exit(code if isinstance(code, int) else 0)


def _run(cli: Any, argv: Sequence[str] | None) -> Any:
    """`cli`'s exit code; what it raises becomes a message and an exit code of ours."""
    import click

    from streaming.cli.output import report_error

    args = list(argv) if argv is not None else sys.argv[1:]
    as_json = "--json" in args[:args.index("--")] if "--" in args else "--json" in args
    try:
        return cli.main(args=args, prog_name="streaming", standalone_mode=False)
    except click.exceptions.Abort:  # click turns KeyboardInterrupt into Abort
        click.echo("Aborted!", err=True)
        sys.exit(_INTERRUPTED)
    except click.ClickException as err:  # usage errors: 2
        report_error(err.format_message(), err.exit_code, as_json, stderr=False)
        err.show()  # with the usage line
        sys.exit(err.exit_code)
    except BrokenPipeError:  # `streaming head ds | head -1`: the reader left, nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Exception as err:  # what no command foresaw: one line, not a page of traceback
        if os.environ.get("STREAMING_DEBUG"):
            raise
        first = (str(err).strip().splitlines() or [""])[0][:500]
        report_error(f"{type(err).__name__}: {first} (STREAMING_DEBUG=1 shows the traceback)",
                     1, as_json)
        sys.exit(1)


_INTERRUPTED = 130  # the shell's code for a command ended by SIGINT (128 + 2); 1 is bad data
_TERMINATED = 143  # ... and by SIGTERM (128 + 15)


def _terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
    raise SystemExit(_TERMINATED)
