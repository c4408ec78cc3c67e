"""Pure parsing of every scheme's URL shape (no SDK imports, no I/O, no environment).

Kept apart from the backends so that URL rules can be checked, and tested, on a machine that has
none of the optional cloud libraries installed.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any, Literal

__all__ = ["BAD_OUT", "UC_PREFIX", "Layout", "join_key", "parse_azure_url", "parse_dbfs_url",
           "parse_hf_url", "parse_oci_url", "parse_sftp_url", "redact", "redact_text",
           "scheme_of", "split_out", "split_url"]

Layout = Literal["account", "container"]

BAD_OUT = (
    "Invalid `out` argument. It is either a string of local/remote directory or a list of two "
    "strings with [local, remote]."
)


def split_url(url: str) -> tuple[str, str, str]:
    """Split an object-store URL into ``(scheme, netloc, key prefix without surrounding
    slashes)``.

    Everything after the bucket is the key, as boto3 and the stores' consoles take it: ``?``,
    ``#`` and ``%XX`` are characters of the key, not a query, a fragment or an escape (read as
    URL syntax, ``s3://b/train?v=1`` and ``s3://b/train?v=2`` were both the prefix ``train``).
    Tabs and line breaks are dropped and leading control characters stripped, as
    `urllib.parse.urlsplit` does, so a URL pasted with a newline names what it did before.
    """
    cleaned = url.lstrip(_C0_OR_SPACE).translate(_DROPPED)
    scheme, sep, rest = cleaned.partition("://")
    if not sep or not scheme.isascii() or "/" in scheme:
        parsed = urllib.parse.urlsplit(url)
        return parsed.scheme, parsed.netloc, parsed.path.strip("/")
    netloc, _, key = rest.partition("/")
    return scheme.lower(), netloc, key.strip("/")


_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_DROPPED = str.maketrans("", "", "\t\r\n")


def join_key(*parts: str) -> str:
    """Join object-key fragments with single slashes, dropping empty ones."""
    return "/".join(part.strip("/") for part in parts if part and part.strip("/"))


def scheme_of(url: str) -> str:
    """The URL's scheme in lower case, ``""`` for a plain path (the one way we ask)."""
    return urllib.parse.urlsplit(url).scheme.lower()


def redact(url: str) -> str:
    """`url` without the password of its authority (``sftp://user:secret@host/d`` ->
    ``sftp://user@host/d``): what messages and reports may show."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user.partition(':')[0]}@{host}"))


# `scheme://user:password@` inside any text (a report, a message, JSON).
_SECRET_AUTHORITY = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@\"']*):[^@\s/\"']*@")


def redact_text(text: str) -> str:
    """`text` with the password of every URL in it removed (see `redact`): for whole reports
    whose URLs come from several places."""
    return _SECRET_AUTHORITY.sub(r"\1@", text)


def split_out(out: Any) -> tuple[str | None, str | None]:
    """``(local directory or None, remote URL/directory or None)`` of a writer's `out`.

    The one parser of the reference's `out` argument (writers, converters, merges): a string
    with a scheme is a remote (a temp directory will be the local side), a plain string is a
    local directory, and a ``(local, remote)`` pair is both (an empty remote means none).

    Raises:
        ValueError: the reference's message for any other shape.
    """
    if isinstance(out, str):
        return (None, out.rstrip("/")) if scheme_of(out) else (out, None)
    if isinstance(out, (tuple, list)) and len(out) == 2 and all(isinstance(p, str) for p in out):
        return out[0], out[1].rstrip("/") or None
    raise ValueError(BAD_OUT)


def parse_azure_url(url: str, layout: Layout | None = None,
                    account: str | None = None) -> tuple[str, str, str]:
    """``(account, container, prefix)`` of an ``azure://`` URL under the given or guessed layout.

    Args:
        url: the URL.
        layout: "account" (``azure://<account>/<container>/<path>``, the reference's
            downloader) or "container" (``azure://<container>/<path>``, its uploader). None
            guesses: a netloc with a dot, equal to `account`, or any netloc when `account` is
            unknown is an account; otherwise it is a container.
        account: the configured account name (`AZURE_ACCOUNT_NAME`), if any.
    """
    _, netloc, path = split_url(url)
    if layout is None:
        is_account = "." in netloc or account is None or netloc == account
        layout = "account" if is_account else "container"
    if layout == "account":
        container, _, prefix = path.partition("/")
        return account or netloc.split(".")[0], container, prefix
    if layout == "container":
        return account or netloc.split(".")[0], netloc, path
    raise ValueError(f"Azure layout must be 'account' or 'container', got {layout!r}")


def parse_sftp_url(url: str) -> urllib.parse.SplitResult:
    """Validate an ``sftp://`` URL the way the reference does and return its parts.

    Raises:
        ValueError: no hostname, or a query/fragment.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.hostname is None:
        raise ValueError("If specifying a URI, the URI must include the hostname.")
    if parts.query or parts.fragment:
        # The reference's words, then the URL: a folder holding '?' or '#' cannot be named.
        raise ValueError(f"Query and fragment parameters are not supported as part of a URI: "
                         f"{redact(url)!r} ('?' and '#' cannot be part of an SFTP path here).")
    return parts


def parse_hf_url(url: str) -> tuple[str, str]:
    """``(repo_id "org/repo", path inside the repo)`` of an ``hf://datasets/...`` URL.

    Raises:
        ValueError: not a dataset URL, or no ``org/repo``.
    """
    _, kind, path = split_url(url)
    parts = path.split("/")
    if kind != "datasets" or len(parts) < 2 or not all(parts[:2]):
        raise ValueError(f"Expected an hf://datasets/<org>/<repo>[/<path>] URL, got {url}")
    return "/".join(parts[:2]), "/".join(parts[2:])


def parse_oci_url(url: str) -> tuple[str, str | None, str]:
    """``(bucket, namespace or None, prefix)`` of an ``oci://bucket@namespace/prefix`` URL."""
    _, netloc, prefix = split_url(url)
    bucket, _, namespace = netloc.partition("@")
    if not bucket:
        raise ValueError(f"OCI URL needs a bucket: {url}")
    return bucket, namespace or None, prefix


UC_PREFIX = "/Volumes"


def parse_dbfs_url(url: str) -> tuple[str, bool]:
    """``(absolute path, is a Unity Catalog volume)`` of a ``dbfs:/...`` URL."""
    if not url.startswith("dbfs:/"):
        raise ValueError(f"Expected a dbfs:/ URL, got {url}")
    path = "/" + url[len("dbfs:"):].lstrip("/")
    path = path.rstrip("/") or "/"
    return path, path == UC_PREFIX or path.startswith(UC_PREFIX + "/")
