"""Scripts that turn raw text corpora into the MDS layouts `streaming.text` reads.

Each module runs as ``python -m streaming.text.convert.<name>`` with the reference's flags:
`c4` (Hugging Face `datasets`, imported when it runs), `pile` and `enwiki_text`. The reference's
BERT pretraining pipeline (``enwiki/tfrecord``, ``enwiki/mds``) is not provided; see
docs/domain_convert.md.
"""

from __future__ import annotations

__all__: list[str] = []
