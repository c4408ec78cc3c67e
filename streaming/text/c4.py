"""`StreamingC4`: the Colossal Clean Crawled Corpus, tokenized as it streams.

Expects a `text` column (the reference's converter also writes `timestamp` and `url`).
"""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.text.tokenized import TokenizedTextDataset

__all__ = ["StreamingC4"]


class StreamingC4(TokenizedTextDataset):
    """C4 streamed from MDS shards; arguments and behaviour of `TokenizedTextDataset`."""

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
