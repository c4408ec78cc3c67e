"""Getting data into MDS: one-call converters, parallel writing, and the Spark converter.

Everything here sits on top of the library (the library never imports it). Names load lazily,
so importing `streaming.convert` needs neither pyarrow nor pyspark; `dataframe_to_mds` needs
pyspark, the table converters pyarrow.
"""

from __future__ import annotations

from streaming.lazy_names import lazy_names

_LAZY = {
    "ConversionError": "streaming.convert.columns",
    "infer_columns": "streaming.convert.columns",
    "ParallelResult": "streaming.convert.parallel",
    "write_parallel": "streaming.convert.parallel",
    "parquet_to_mds": "streaming.convert.tabular",
    "csv_to_mds": "streaming.convert.tabular",
    "jsonl_to_mds": "streaming.convert.tabular",
    "hf_to_mds": "streaming.convert.hf",
    "table_to_mds": "streaming.convert.hf",
    "imagefolder_to_mds": "streaming.convert.images",
    "convert": "streaming.convert.api",
    "FORMATS": "streaming.convert.api",
    "dataframe_to_mds": "streaming.convert.spark",
    "merge_index": "streaming.merge",
    "index_parquet": "streaming.convert.parquet_index",
    "ParquetIndexError": "streaming.convert.parquet_index",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_names(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
