"""``python -m streaming``: the same command line as the ``streaming`` console script."""

from __future__ import annotations

from streaming.cli import main

if __name__ == "__main__":
    main()
