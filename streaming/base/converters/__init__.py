"""Reference import path of the Spark converter (aliases of `streaming.convert.spark`).

Importing it needs pyspark; without it the ImportError names the extra to install.
"""

from __future__ import annotations

from streaming.base._lazy import submodules

# Through the submodule, as the reference's: its first import binds the package attribute
# `dataframe_to_mds` to the module, which this import then rebinds to the function.
from streaming.base.converters.dataframe_to_mds import (
    SPARK_TO_MDS,
    dataframe_to_mds,
    infer_dataframe_schema,
    is_json_compatible,
)

__all__ = ["SPARK_TO_MDS", "dataframe_to_mds", "infer_dataframe_schema", "is_json_compatible"]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
