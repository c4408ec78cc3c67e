"""The reference's user-facing storage messages, kept verbatim where users or tests match them.

Plain strings only, so the alias layer and the backends can share them without importing any
cloud SDK.
"""

from __future__ import annotations

__all__ = ["GCS_ERROR_NO_AUTHENTICATION", "BOTOCORE_CLIENT_ERROR_CODES", "s3_not_found"]

BOTOCORE_CLIENT_ERROR_CODES = {"403", "404", "NoSuchKey"}

GCS_ERROR_NO_AUTHENTICATION = (
    "Either set the environment variables `GCS_KEY` and `GCS_SECRET` or use any of the methods "
    "in https://cloud.google.com/docs/authentication/external/set-up-adc to set up Application "
    "Default Credentials. See also "
    "https://docs.mosaicml.com/projects/mcli/en/latest/resources/secrets/gcp.html.\n"
)


def s3_not_found(url: str) -> str:
    """The reference's S3 not-found text (it also covers 403: S3 hides objects you cannot read)."""
    return (f"Object {url} not found! Either check the bucket path or the bucket permission. "
            "If the bucket is a requester pays bucket, then provide the bucket name to the "
            "environment variable `MOSAICML_STREAMING_AWS_REQUESTER_PAYS`.")
