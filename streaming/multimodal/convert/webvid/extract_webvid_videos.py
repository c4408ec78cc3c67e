"""Move the videos out of a WebVid MDS dataset (as `crawl_webvid` writes it) into plain files:
``python -m streaming.multimodal.convert.webvid.extract_webvid_videos --in INSIDE
--out_mds OUTSIDE --out_mp4 VIDEOS``.

Sample `i`'s video goes to ``VIDEOS/<i // 1000:03>/<i % 1000:03>.mp4`` and its row, with that
relative path as `content_path` instead of `content`, to the new dataset, which
`StreamingOutsideGIWebVid` / `StreamingOutsideDTWebVid` read with ``extra_remote=VIDEOS``.
Small shards of metadata then index videos a reader fetches one at a time.
"""

from __future__ import annotations

import os
from argparse import ArgumentParser, Namespace
from collections.abc import Sequence

from streaming.base._reimports import reimported as _reimported
from streaming.format.mds.writer import MDSWriter
from streaming.progress import make_progress
from streaming.units import get_list_arg

__all__ = ["OUT_COLUMNS", "content_path_of", "extract", "main", "out_columns", "parse_args"]

OUT_COLUMNS = {"videoid": "str", "name": "str", "page_idx": "str", "page_dir": "str",
               "duration": "int", "contentUrl": "str", "content_path": "str"}
out_columns = OUT_COLUMNS  # the reference module's name for it


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Move WebVid videos out of their MDS shards.")
    parser.add_argument("--in", type=str, required=True,
                        help="Input MDS dataset directory (videos inside)")
    parser.add_argument("--out_mds", type=str, required=True,
                        help="Output MDS dataset directory (videos outside)")
    parser.add_argument("--out_mp4", type=str, required=True,
                        help="Output directory for the video files")
    parser.add_argument("--compression", type=str, default="zstd:16",
                        help="Output shard compression. Default: zstd:16")
    parser.add_argument("--hashes", type=str, default="sha1,xxh3_64",
                        help="Comma-separated hashes per shard. Default: sha1,xxh3_64")
    parser.add_argument("--size_limit", type=int, default=1 << 25,
                        help="Bytes per output shard. Default: 33554432")
    return parser.parse_args(argv)


def content_path_of(index: int) -> str:
    """The video file of sample `index`, relative to the videos directory (1000 per folder)."""
    return f"{index // 1000:03}/{index % 1000:03}.mp4"


def extract(in_dir: str, out_mds: str, out_mp4: str, compression: str | None = "zstd:16",
            hashes: list[str] | None = None, size_limit: int = 1 << 25,
            progress_bar: bool = True) -> int:
    """Write the videos as files and the rest as a new dataset; returns the samples moved.

    Raises:
        MissingColumnError: an input sample lacks one of `OUT_COLUMNS` (besides the path).
    """
    from streaming.dataset import StreamingDataset

    dataset = StreamingDataset(local=in_dir, batch_size=1)
    try:
        total = dataset.num_samples
        with MDSWriter(out=out_mds, columns=OUT_COLUMNS, compression=compression or None,
                       hashes=list(hashes or []), size_limit=size_limit) as writer, \
                make_progress(progress_bar, total, desc="videos") as progress:
            for index in range(total):
                sample = dict(dataset[index])
                content_path = content_path_of(index)
                filename = os.path.join(out_mp4, content_path)
                os.makedirs(os.path.dirname(filename), exist_ok=True)
                with open(filename, "wb") as video:
                    video.write(sample.pop("content"))
                sample["content_path"] = content_path
                writer.write(sample)
                progress(1)
    finally:
        dataset.close()
    return total


def main(args: Namespace) -> int:
    """Extract ``args.in`` into ``args.out_mds`` and ``args.out_mp4``."""
    return extract(getattr(args, "in"), args.out_mds, args.out_mp4, args.compression,
                   get_list_arg(args.hashes), args.size_limit)


if __name__ == "__main__":
    main(parse_args())

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
