"""Reference import path of the Spark converter's module (aliases of `streaming.convert.spark`).

The package `streaming.base.converters` binds the names below (the functions), as the
reference's does, so `streaming.base.converters.dataframe_to_mds` stays the function.
"""

from __future__ import annotations

from streaming.convert.spark import (
    SPARK_TO_MDS,
    dataframe_to_mds,
    infer_dataframe_schema,
    is_json_compatible,
)

__all__ = ["SPARK_TO_MDS", "dataframe_to_mds", "infer_dataframe_schema", "is_json_compatible"]
