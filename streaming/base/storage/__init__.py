"""Old import path `streaming.base.storage`: the reference's downloader and uploader classes.

Aliases only; the implementations are thin adapters in `download` / `upload` over
`streaming.storage`.
"""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.base.storage.download import (
    AlipanDownloader,
    AzureDataLakeDownloader,
    AzureDownloader,
    CloudDownloader,
    DatabricksUnityCatalogDownloader,
    DBFSDownloader,
    GCSDownloader,
    HFDownloader,
    LocalDownloader,
    OCIDownloader,
    S3Downloader,
    SFTPDownloader,
)
from streaming.base.storage.upload import (
    AzureDataLakeUploader,
    AzureUploader,
    CloudUploader,
    GCSUploader,
    HFUploader,
    LocalUploader,
    OCIUploader,
    S3Uploader,
)

__all__ = [
    "CloudUploader",
    "S3Uploader",
    "GCSUploader",
    "OCIUploader",
    "LocalUploader",
    "AzureUploader",
    "AzureDataLakeUploader",
    "HFUploader",
    "CloudDownloader",
    "S3Downloader",
    "SFTPDownloader",
    "GCSDownloader",
    "OCIDownloader",
    "AzureDownloader",
    "AzureDataLakeDownloader",
    "HFDownloader",
    "DatabricksUnityCatalogDownloader",
    "DBFSDownloader",
    "AlipanDownloader",
    "LocalDownloader",
]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
