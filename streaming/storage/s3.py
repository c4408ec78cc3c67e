"""`s3://bucket/prefix`: Amazon S3 and S3-compatible servers (R2, MinIO, SeaweedFS...) via obstore.

Reads the reference's environment once, when the store is opened: `S3_ENDPOINT_URL`,
`S3_CANNED_ACL`, `MOSAICML_STREAMING_AWS_REQUESTER_PAYS`, and the standard `AWS_*` credentials
(obstore reads those itself). Like boto3, which the reference signs with, it also takes the
keys and region of the profile in use (`AWS_PROFILE`, else `default`) from the shared files
(`~/.aws/credentials`, `~/.aws/config`, or `AWS_SHARED_CREDENTIALS_FILE` / `AWS_CONFIG_FILE`);
profiles without static keys (SSO, roles, `credential_process`) go through boto3 when it is
installed. With no credentials configured, reads that fail in the credential chain are retried
once unsigned, as the reference does for public buckets.
"""

from __future__ import annotations

import configparser
import logging
import os
from typing import TYPE_CHECKING, Any, cast

from obstore.exceptions import GenericError, UnauthenticatedError
from obstore.store import S3Store as _ObstoreS3

if TYPE_CHECKING:
    from obstore.store import S3Config

from streaming.errors import RemoteUnreachableError
from streaming.storage._forksafe import forksafe
from streaming.storage._obstore import ObstoreBackedStore
from streaming.storage.base import AccessDeniedError, ObjectStat
from streaming.storage.client_options import ClientOptions
from streaming.storage.messages import s3_not_found
from streaming.storage.urls import split_url

__all__ = ["S3Store", "S3Options"]

logger = logging.getLogger(__name__)

_CREDENTIAL_ENV = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                   "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")


class S3Options(ClientOptions, total=False):
    """Settings for `S3Store`; each defaults to the environment variable named."""

    endpoint: str
    """Custom endpoint URL (`S3_ENDPOINT_URL`); path-style addressing is used with it."""
    region: str
    """Bucket region (`AWS_REGION` / `AWS_DEFAULT_REGION`, else us-east-1; "auto" for R2)."""
    access_key_id: str
    """Access key (`AWS_ACCESS_KEY_ID`)."""
    secret_access_key: str
    """Secret key (`AWS_SECRET_ACCESS_KEY`)."""
    session_token: str
    """Temporary-credential token (`AWS_SESSION_TOKEN`)."""
    requester_pays: bool
    """Pay for requests as the requester (bucket named in `MOSAICML_STREAMING_AWS_REQUESTER_PAYS`).
    """
    canned_acl: str
    """ACL applied to uploads, e.g. "bucket-owner-full-control" (`S3_CANNED_ACL`)."""
    skip_signature: bool
    """Send unsigned requests (public buckets). Without it, a store with no configured
    credentials tries the default chain (instance metadata...) and falls back to unsigned."""


def _requester_pays(bucket: str) -> bool:
    names = os.environ.get("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "")
    return bucket in {name.strip() for name in names.split(",") if name.strip()}


def _has_credentials(config: dict[str, Any]) -> bool:
    return "access_key_id" in config or any(os.environ.get(name) for name in _CREDENTIAL_ENV)


# A profile's settings that obtain credentials other than static keys: boto3 resolves them.
_DYNAMIC_PROFILE_KEYS = ("role_arn", "credential_process", "sso_session", "sso_start_url",
                         "web_identity_token_file", "credential_source")


def shared_profile() -> dict[str, str]:
    """The settings of the AWS profile in use (`AWS_PROFILE`, else `default`) in the shared
    config and credentials files, as boto3 reads them (the credentials file wins); {} when
    there are none. An unreadable or malformed file counts as absent, as boto3 skips it."""
    name = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or "default"
    config_path = os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config"
    credentials_path = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials"
    found: dict[str, str] = {}
    for path, sections in ((config_path, (f"profile {name}", name) if name == "default"
                            else (f"profile {name}",)),
                           (credentials_path, (name,))):
        parser = configparser.RawConfigParser()
        try:
            parser.read(os.path.expanduser(path))
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in sections:
            if parser.has_section(section):
                found.update((key, value.strip()) for key, value in parser.items(section))
    return found


def s3_config(bucket: str, options: dict[str, Any]) -> dict[str, Any]:
    """obstore S3 settings for `bucket` from `options` over the environment and the shared AWS
    profile (read now, once), in boto3's order: arguments, then `AWS_*` variables, then the
    profile."""
    config: dict[str, Any] = {}
    endpoint = options.pop("endpoint", None) or os.environ.get("S3_ENDPOINT_URL")
    if endpoint:
        config["endpoint"] = endpoint
        config["virtual_hosted_style_request"] = False
    for key in ("access_key_id", "secret_access_key", "session_token"):
        if options.get(key):
            config[key] = options.pop(key)
    region = (options.pop("region", None) or os.environ.get("AWS_REGION")
              or os.environ.get("AWS_DEFAULT_REGION"))
    explicit_keys = "access_key_id" in config or os.environ.get("AWS_ACCESS_KEY_ID")
    if not region or not explicit_keys:
        profile = shared_profile()
        region = region or profile.get("region")
        if not explicit_keys and profile.get("aws_access_key_id") and profile.get(
                "aws_secret_access_key"):
            config["access_key_id"] = profile["aws_access_key_id"]
            config["secret_access_key"] = profile["aws_secret_access_key"]
            if profile.get("aws_session_token"):
                config["session_token"] = profile["aws_session_token"]
    config["region"] = region or "us-east-1"
    if options.pop("requester_pays", _requester_pays(bucket)):
        config["request_payer"] = True
    if options.pop("skip_signature", False):
        config["skip_signature"] = True
    return config


class S3Store(ObstoreBackedStore):
    """An S3 bucket (or a prefix inside one).

    Args:
        url: ``s3://bucket[/prefix]``.
        options: `S3Options`.
    """

    scheme = "s3"

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url)
        _, self.bucket, self.prefix = split_url(url)
        if not self.bucket:
            raise ValueError(f"S3 URL needs a bucket: {url}")
        self.canned_acl = options.pop("canned_acl", None) or os.environ.get("S3_CANNED_ACL")
        self._config = s3_config(self.bucket, options)
        # Decided now, in the opening process: a worker must sign exactly as its parent did.
        # boto3 resolves what static keys cannot say (a role, SSO, a credential process).
        self._use_profile = "access_key_id" not in self._config and not os.environ.get(
            "AWS_ACCESS_KEY_ID") and (bool(os.environ.get("AWS_PROFILE")) or any(
                key in _DYNAMIC_PROFILE_KEYS for key in shared_profile()))
        self._may_go_unsigned = not (_has_credentials(self._config)
                                     or self._config.get("skip_signature"))
        endpoint = self._config.get("endpoint", "")
        self._configure(options, allow_http=endpoint.startswith("http://"))

    def _build(self, settings: dict[str, Any]) -> _ObstoreS3:
        provider = _profile_provider() if self._use_profile else None
        return _ObstoreS3(self.bucket, prefix=self.prefix or None,
                          config=cast("S3Config", self._config),
                          credential_provider=provider, **settings)

    def _not_found_message(self, path: str) -> str:
        return s3_not_found(self.url_for(path))

    def _upload_settings(self) -> dict[str, Any]:
        """Uploads also carry the canned-ACL header, when one is set."""
        settings = super()._upload_settings()
        if self.canned_acl:
            settings["client_options"]["default_headers"] = {"x-amz-acl": str(self.canned_acl)}
        return settings

    # Reads fall back to unsigned requests once when no credentials were configured and the
    # credential chain (instance metadata etc.) failed: public buckets, as in the reference.
    @forksafe
    def get(self, path: str) -> bytes:
        return self._unsigned_fallback(super().get, path)

    @forksafe
    def get_range(self, path: str, start: int, end: int) -> bytes:
        return self._unsigned_fallback(super().get_range, path, start, end)

    @forksafe
    def size(self, path: str) -> int:
        return self._unsigned_fallback(super().size, path)

    @forksafe
    def modified(self, path: str) -> float | None:
        return self._unsigned_fallback(super().modified, path)

    @forksafe
    def get_stamped(self, path: str) -> tuple[bytes, float | None]:
        return self._unsigned_fallback(super().get_stamped, path)

    @forksafe
    def download(self, path: str, local_path: str, **kwargs: Any) -> int:
        return self._unsigned_fallback(super().download, path, local_path, **kwargs)

    @forksafe
    def list_stats(self, prefix: str = "") -> dict[str, ObjectStat]:
        return self._unsigned_fallback(super().list_stats, prefix)

    @forksafe
    def check_container(self) -> None:
        """Also fails when no credentials were configured and the credential chain found none
        (no instance role): uploads cannot go unsigned, so a writer would only fail at its
        end (the reference's boto3 raises `NoCredentialsError` at once)."""
        if not self._may_go_unsigned:
            super().check_container()
            return
        try:
            with self._errors(""):
                self._list_first()
        except (UnauthenticatedError, GenericError, RemoteUnreachableError) as err:
            raise AccessDeniedError(
                f"No AWS credentials for {self.url}: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, put keys in ~/.aws/credentials (AWS_PROFILE picks a "
                "profile), or run where instance credentials exist. The credential chain "
                f"said: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
            ) from None
        except AccessDeniedError:
            return

    def _unsigned_fallback(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._may_go_unsigned:
            return call(*args, **kwargs)
        try:
            return call(*args, **kwargs)
        # The credential chain failing (e.g. no instance metadata service) surfaces as a
        # generic error, which the store may already have translated into a connection one.
        except (UnauthenticatedError, GenericError, RemoteUnreachableError) as err:
            logger.info("No usable AWS credentials for %s (%s); retrying unsigned.", self.url,
                        str(err).split("\n", 1)[0])
            self._config = {**self._config, "skip_signature": True}
            self._may_go_unsigned = False
            self._client_obj = self._patient_obj = None
            return call(*args, **kwargs)


def _profile_provider() -> Any:
    """The profile's credentials through boto3 when it is installed (obstore has no profiles)."""
    try:
        import boto3
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:
        return None
    return Boto3CredentialProvider(boto3.Session())
