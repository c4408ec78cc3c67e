"""WebVid: crawl the videos a CSV lists into MDS, by keyword subsets, and move them out of it."""

from __future__ import annotations

__all__: list[str] = []
