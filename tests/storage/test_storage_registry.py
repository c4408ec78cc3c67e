"""Scheme registry, URL parsing and environment handling: no servers needed."""

from __future__ import annotations

import pickle
import sys

import pytest

from streaming.errors import MissingDependencyError
from streaming.storage import open_store, register_store, registered_schemes
from streaming.storage.schemes import get_store_spec
from streaming.storage.urls import (
    parse_azure_url,
    parse_dbfs_url,
    parse_hf_url,
    parse_oci_url,
    parse_sftp_url,
)

REFERENCE_SCHEMES = {"", "s3", "gs", "azure", "azure-dl", "sftp", "hf", "oci", "dbfs"}


def test_every_reference_scheme_and_extensions_are_registered() -> None:
    assert REFERENCE_SCHEMES | {"file", "http", "https", "memory"} <= set(registered_schemes())


def test_unknown_scheme_names_the_url() -> None:
    with pytest.raises(ValueError, match="Unsupported remote path: ftp://host/data"):
        open_store("ftp://host/data")


def test_missing_dependency_names_the_extra() -> None:
    register_store("needsdep", "tests.storage.needs_missing_dep:Store", extra="nonesuch")
    with pytest.raises(MissingDependencyError, match=r"pip install 'shardstream\[nonesuch\]'"):
        open_store("needsdep://x")
    with pytest.raises(ImportError):  # also the builtin type callers may catch
        open_store("needsdep://x")


@pytest.mark.parametrize(("url", "module", "extra"), [
    ("hf://datasets/org/repo/data", "huggingface_hub", "hf"),
    ("oci://bucket@ns/data", "oci", "oci"),
    ("dbfs:/Volumes/cat/schema/vol/data", "databricks.sdk", "databricks"),
])
def test_sdk_backends_without_their_sdk(url: str, module: str, extra: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    spec = get_store_spec(url.split(":")[0])
    assert spec is not None
    root = module.split(".")[0]
    for name in [root, *(n for n in sys.modules if n.startswith(f"{root}."))]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.delitem(sys.modules, spec.target.split(":")[0], raising=False)
    with pytest.raises(MissingDependencyError, match=rf"shardstream\[{extra}\]"):
        open_store(url)
    assert get_store_spec(url.split(":")[0]).extra == extra  # type: ignore[union-attr]


@pytest.mark.parametrize(("url", "layout", "account", "expected"), [
    ("azure://acct.blob.core.windows.net/ctr/a/b", None, None, ("acct", "ctr", "a/b")),
    ("azure://acct/ctr/a", None, None, ("acct", "ctr", "a")),
    ("azure://acct/ctr/a", None, "acct", ("acct", "ctr", "a")),
    ("azure://ctr/a/b", None, "acct", ("acct", "ctr", "a/b")),  # the uploader's shape
    ("azure://ctr/a/b", "container", None, ("ctr", "ctr", "a/b")),
    ("azure://x/ctr", "account", "acct", ("acct", "ctr", "")),
])
def test_azure_url_shapes(url: str, layout: str | None, account: str | None,
                          expected: tuple[str, str, str]) -> None:
    assert parse_azure_url(url, layout, account) == expected  # type: ignore[arg-type]


def test_azure_layout_must_be_known() -> None:
    with pytest.raises(ValueError, match="layout"):
        parse_azure_url("azure://a/b", "bucket")  # type: ignore[arg-type]


def test_sftp_url_rules() -> None:
    parts = parse_sftp_url("sftp://u:p@host:2222/data/x")
    assert (parts.hostname, parts.port, parts.username, parts.password, parts.path) == (
        "host", 2222, "u", "p", "/data/x")
    with pytest.raises(ValueError, match="must include the hostname"):
        parse_sftp_url("sftp:///data")
    with pytest.raises(ValueError, match="Query and fragment.*'sftp://u@host/data\\?x=1'"):
        parse_sftp_url("sftp://u:secret@host/data?x=1")  # named, without its password


def test_hf_oci_dbfs_urls() -> None:
    assert parse_hf_url("hf://datasets/org/repo/sub/dir") == ("org/repo", "sub/dir")
    assert parse_hf_url("hf://datasets/org/repo") == ("org/repo", "")
    with pytest.raises(ValueError, match="hf://datasets"):
        parse_hf_url("hf://models/org/repo")
    assert parse_oci_url("oci://bkt@ns/a/b") == ("bkt", "ns", "a/b")
    assert parse_oci_url("oci://bkt/a") == ("bkt", None, "a")
    assert parse_dbfs_url("dbfs:/Volumes/c/s/v/data/") == ("/Volumes/c/s/v/data", True)
    assert parse_dbfs_url("dbfs:/tmp/data") == ("/tmp/data", False)
    assert parse_dbfs_url("dbfs:/VolumesX/a") == ("/VolumesX/a", False)


def test_s3_environment_is_read_at_open(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "other, paid ")
    monkeypatch.setenv("S3_CANNED_ACL", "bucket-owner-full-control")
    store = open_store("s3://paid/prefix")
    monkeypatch.delenv("S3_ENDPOINT_URL")  # later changes do not move an open store
    config = store._config  # type: ignore[attr-defined]
    assert config["endpoint"] == "http://127.0.0.1:9" and config["request_payer"] is True
    assert config["virtual_hosted_style_request"] is False
    assert store.canned_acl == "bucket-owner-full-control"  # type: ignore[attr-defined]
    assert "request_payer" not in open_store("s3://free")._config  # type: ignore[attr-defined]
    clone = pickle.loads(pickle.dumps(store))
    assert clone._config == config  # type: ignore[attr-defined]


def test_s3_without_credentials_may_fall_back_to_unsigned(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    anonymous = open_store("s3://public")
    assert anonymous._may_go_unsigned  # type: ignore[attr-defined]
    assert "skip_signature" not in anonymous._config  # type: ignore[attr-defined]
    signed = open_store("s3://public", access_key_id="k", secret_access_key="s")
    assert not signed._may_go_unsigned  # type: ignore[attr-defined]
    explicit = open_store("s3://public", skip_signature=True)
    assert explicit._config["skip_signature"] is True  # type: ignore[attr-defined]


def test_unknown_option_is_rejected() -> None:
    with pytest.raises(TypeError, match="endpont"):
        open_store("s3://bucket", endpont="http://127.0.0.1:1")
