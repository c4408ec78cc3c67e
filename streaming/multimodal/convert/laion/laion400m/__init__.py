"""LAION-400M: convert img2dataset's parquet shards to MDS and upload them as they finish."""

from __future__ import annotations

__all__: list[str] = []
