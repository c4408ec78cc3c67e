"""Old import path `streaming.base.spanner`: alias of `streaming.spanner`."""

from __future__ import annotations

from streaming.spanner import Spanner

__all__ = ["Spanner"]
