"""LAION image-text datasets to MDS."""

from __future__ import annotations

__all__: list[str] = []
