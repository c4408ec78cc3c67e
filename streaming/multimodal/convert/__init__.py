"""Scripts that build the MDS layouts `streaming.multimodal` reads, and LAION-400M's.

`webvid.crawl_webvid` downloads WebVid videos into shards, `webvid.crawl_webvid_subsets` into
per-keyword datasets, `webvid.extract_webvid_videos` moves videos out of the shards into files,
and `laion.laion400m.convert_and_upload` converts and uploads img2dataset's parquet shards. Each
runs with ``python -m`` and the reference's flags; see docs/domain_convert.md.
"""

from __future__ import annotations

__all__: list[str] = []
