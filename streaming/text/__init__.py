"""Ready-made text datasets: C4 and the Pile (tokenized on read) and BERT-ready EnWiki.

transformers is optional and imported only when a C4 or Pile dataset is built.
"""

from __future__ import annotations

from streaming.text.c4 import StreamingC4
from streaming.text.enwiki import StreamingEnWiki
from streaming.text.pile import StreamingPile

__all__ = ["StreamingC4", "StreamingEnWiki", "StreamingPile"]
