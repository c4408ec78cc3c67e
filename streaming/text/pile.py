"""`StreamingPile`: the Pile (22 merged English corpora), tokenized as it streams.

Expects a `text` column (the reference's converter also writes `pile_set_name`).
"""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.text.tokenized import TokenizedTextDataset

__all__ = ["StreamingPile"]


class StreamingPile(TokenizedTextDataset):
    """The Pile streamed from MDS shards; arguments and behaviour of `TokenizedTextDataset`."""

    @staticmethod
    def _group_method_message(group_method: str) -> str:
        del group_method  # the reference's Pile message does not name the bad value
        return 'Only group_method="truncate" is supported at this time.'

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
