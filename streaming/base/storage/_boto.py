"""boto3 clients for the reference-shaped S3 and GCS-HMAC adapter classes.

Why a second S3 path exists: the reference's `S3Downloader`, `S3Uploader`, `GCSDownloader` and
`GCSUploader` are boto3 clients, and code written against them reaches into that: it reads
`uploader.s3`, patches `check_bucket_exists`, catches botocore's `ClientError`, and runs under
moto's in-process `mock_aws()`, which intercepts botocore only. So when boto3 is installed these
four classes talk through boto3, with the reference's settings (adaptive retries, the read
timeout, `S3_ENDPOINT_URL`, unsigned fallback, requester-pays buckets, `S3_CANNED_ACL`). Without
boto3 they use `streaming.storage` like every other class. Datasets and writers never come here:
they read and write through `streaming.storage` (obstore).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from streaming.storage.messages import BOTOCORE_CLIENT_ERROR_CODES, s3_not_found

__all__ = [
    "GCS_HMAC_ENDPOINT",
    "bucket_and_key",
    "check_bucket",
    "download_object",
    "download_s3",
    "gcs_hmac_client",
    "has_boto3",
    "has_module",
    "list_keys",
    "s3_client",
    "upload_object",
]

GCS_HMAC_ENDPOINT = "https://storage.googleapis.com"  # GCS's S3-compatible API


def has_module(name: str) -> bool:
    """Whether `name` can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing, or blocked in sys.modules
        return False


def has_boto3() -> bool:
    """Whether boto3 is installed, so the adapters speak boto3 as the reference does."""
    return has_module("boto3")


def s3_client(timeout: float | None = None, *, unsigned: bool = False) -> Any:
    """A boto3 S3 client as the reference builds it: adaptive retries, `S3_ENDPOINT_URL`."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    settings: dict[str, Any] = {"retries": {"mode": "adaptive"}}
    if timeout is not None:
        settings["read_timeout"] = timeout
    if unsigned:
        settings["signature_version"] = UNSIGNED
    return boto3.session.Session().client("s3", config=Config(**settings),
                                          endpoint_url=os.environ.get("S3_ENDPOINT_URL"))


def gcs_hmac_client() -> Any:
    """A boto3 client of GCS's S3-compatible API with the `GCS_KEY` / `GCS_SECRET` HMAC keys."""
    import boto3

    return boto3.session.Session().client(
        "s3", region_name="auto", endpoint_url=GCS_HMAC_ENDPOINT,
        aws_access_key_id=os.environ["GCS_KEY"],
        aws_secret_access_key=os.environ["GCS_SECRET"])


def bucket_and_key(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> ``("bucket", "a/b")``."""
    parsed = urlparse(url)
    return parsed.netloc, parsed.path.lstrip("/")


def _error_code(err: Exception) -> str:
    return str(getattr(err, "response", {}).get("Error", {}).get("Code", ""))


def _requester_pays(bucket: str) -> dict[str, str]:
    names = os.environ.get("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "")
    return {"RequestPayer": "requester"} if bucket in names.split(",") else {}


def download_object(client: Any, remote: str, local: str, *, gcs: bool = False) -> None:
    """Download `remote` into `local` through a temp file and a rename.

    Raises:
        botocore.exceptions.ClientError: (S3) a missing or forbidden object, with the
            reference's "Object ... not found!" message.
        FileNotFoundError: (GCS) a missing object.
    """
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import ClientError

    bucket, key = bucket_and_key(remote)
    temp = f"{local}.tmp"
    try:
        client.download_file(bucket, key, temp, ExtraArgs=_requester_pays(bucket),
                             Config=TransferConfig(use_threads=False))
    except ClientError as err:
        remove_quietly(temp)
        if _error_code(err) not in BOTOCORE_CLIENT_ERROR_CODES:
            raise
        if gcs:
            raise FileNotFoundError(f"Object {remote} not found") from err
        raise _not_found_error()(err.response, err.operation_name, s3_not_found(remote)) from err
    except BaseException:
        remove_quietly(temp)
        raise
    os.replace(temp, local)


@functools.cache
def _not_found_error() -> type:
    """botocore's `ClientError` that is also a `FileNotFoundError`, with its own message.

    The reference raised `ClientError` for a missing S3 object; `streaming.storage` raises
    `FileNotFoundError`. One class satisfies code written against either.
    """
    from botocore.exceptions import ClientError

    class S3ObjectNotFoundError(ClientError, FileNotFoundError):
        def __init__(self, response: Any, operation: str, message: str) -> None:
            super().__init__(response, operation)
            self.args = (message,)

        def __str__(self) -> str:
            return str(self.args[0])

    return S3ObjectNotFoundError


def remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def download_s3(remote: str, local: str, timeout: float, client: Any,
                unsigned_client: Callable[[], Any] | None = None) -> Any:
    """Download from S3 as the reference does; returns the client that worked.

    No credentials -> an unsigned client (`unsigned_client()`, else `s3_client`'s); a 400 (some
    public buckets) -> retried unsigned.
    """
    from botocore.exceptions import ClientError, NoCredentialsError

    try:
        download_object(client, remote, local)
        return client
    except NoCredentialsError:
        pass
    except ClientError as err:
        if _error_code(err) != "400":
            raise
    unsigned = (unsigned_client or (lambda: s3_client(timeout, unsigned=True)))()
    download_object(unsigned, remote, local)
    return unsigned


def check_bucket(client: Any, remote: str) -> None:
    """Raise botocore's `ClientError` when `remote`'s bucket is missing or not ours."""
    from botocore.exceptions import ClientError

    bucket, _ = bucket_and_key(remote)
    try:
        client.head_bucket(Bucket=bucket)
    except ClientError as err:
        if _error_code(err) == "404":
            err.args = (f"Either bucket `{bucket}` does not exist! or check the bucket "
                        "permission.",)
        raise


def upload_object(client: Any, local: str, remote: str, *, acl: bool) -> None:
    """Upload one file; with `acl`, `S3_CANNED_ACL` (when set) becomes the object's ACL."""
    bucket, key = bucket_and_key(remote)
    canned = os.environ.get("S3_CANNED_ACL") if acl else None
    extra = {"ACL": canned} if canned else {}
    client.upload_file(local, bucket, key, ExtraArgs=extra, Callback=None)


def list_keys(client: Any, remote: str, prefix: str | None) -> list[str]:
    """Keys under ``<remote's path>/<prefix>``, relative to the bucket (list_objects_v2 pages)."""
    bucket, root = bucket_and_key(remote)
    full = os.path.join(root, prefix or "")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=full)
    return [item["Key"] for page in pages for item in page.get("Contents", [])]
