"""The reference's import paths for formats, readers, writers, Array, Spanner, LocalDataset."""

from __future__ import annotations

import importlib

import pytest

import streaming
from streaming import array, format, local, spanner
from streaming.format import index, jsonl, mds, reader, split_reader, writer, writer_layouts, xsv

ALIASES = [
    ("streaming.base.format", "CSVWriter", xsv.CSVWriter),
    ("streaming.base.format", "JSONWriter", jsonl.JSONWriter),
    ("streaming.base.format", "MDSWriter", mds.MDSWriter),
    ("streaming.base.format", "TSVWriter", xsv.TSVWriter),
    ("streaming.base.format", "XSVWriter", xsv.XSVWriter),
    ("streaming.base.format", "FileInfo", index.FileInfo),
    ("streaming.base.format", "Reader", reader.Reader),
    ("streaming.base.format", "reader_from_json", format.reader_from_json),
    ("streaming.base.format", "get_index_basename", index.get_index_basename),
    ("streaming.base.format", "MDSReader", mds.MDSReader),
    ("streaming.base.format", "JSONReader", jsonl.JSONReader),
    ("streaming.base.format", "CSVReader", xsv.CSVReader),
    ("streaming.base.format", "TSVReader", xsv.TSVReader),
    ("streaming.base.format", "XSVReader", xsv.XSVReader),
    ("streaming.base.format.index", "get_index_basename", index.get_index_basename),
    ("streaming.base.format.base", "FileInfo", index.FileInfo),
    ("streaming.base.format.base", "Reader", reader.Reader),
    ("streaming.base.format.base.reader", "JointReader", reader.JointReader),
    ("streaming.base.format.base.reader", "SplitReader", split_reader.SplitReader),
    ("streaming.base.format.base.writer", "Writer", writer.Writer),
    ("streaming.base.format.base.writer", "JointWriter", writer_layouts.JointWriter),
    ("streaming.base.format.base.writer", "SplitWriter", writer_layouts.SplitWriter),
    ("streaming.base.format.mds", "MDSReader", mds.MDSReader),
    ("streaming.base.format.mds.reader", "MDSReader", mds.MDSReader),
    ("streaming.base.format.mds.writer", "MDSWriter", mds.MDSWriter),
    ("streaming.base.format.json", "JSONReader", jsonl.JSONReader),
    ("streaming.base.format.json.reader", "JSONReader", jsonl.JSONReader),
    ("streaming.base.format.json.writer", "JSONWriter", jsonl.JSONWriter),
    ("streaming.base.format.xsv", "XSVReader", xsv.XSVReader),
    ("streaming.base.format.xsv.reader", "CSVReader", xsv.CSVReader),
    ("streaming.base.format.xsv.writer", "TSVWriter", xsv.TSVWriter),
    ("streaming.base.array", "Array", array.Array),
    ("streaming.base.spanner", "Spanner", spanner.Spanner),
    ("streaming.base.local", "LocalDataset", local.LocalDataset),
    ("streaming", "MDSWriter", mds.MDSWriter),
    ("streaming", "LocalDataset", local.LocalDataset),
]


@pytest.mark.parametrize(("module", "name", "target"), ALIASES)
def test_alias_is_the_real_object(module: str, name: str, target: object) -> None:
    assert getattr(importlib.import_module(module), name) is target


def test_format_package_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, streaming.format, streaming.array, streaming.spanner, streaming.units; "
            "sys.exit('torch' in sys.modules)")
    root = streaming.__path__[0] + "/.."
    assert subprocess.run([sys.executable, "-c", code], cwd=root).returncode == 0
