"""What a store raises, naming the full URL: the error types and the kinds a backend's
`_classify` sorts its client's errors into (`Store._errors` turns a kind into its error).

`missing` and `denied` (and `untrusted`: a TLS certificate no trusted CA signed) are never
retried; `unreachable`, `dropped` and `stalled` are retried at once by
`streaming.storage.transfer`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from streaming.errors import (
    ConnectionDroppedError,
    RemoteUnreachableError,
    StreamingError,
    TransferStalledError,
)

__all__ = ["CONNECTION_ERRORS", "AccessDeniedError", "ErrorKind", "ObjectNotFoundError",
           "UntrustedCertificateError", "error_detail", "untrusted"]


class ObjectNotFoundError(StreamingError, FileNotFoundError):
    """A store has no object at a path; the message names the full URL. Never retried."""


class AccessDeniedError(StreamingError, PermissionError):
    """A store refused the credentials or the operation; the message names the URL."""


class UntrustedCertificateError(StreamingError, PermissionError):
    """The server's TLS certificate is not signed by a trusted CA (a private CA, a self-signed
    certificate): a setting to change, never retried; the message says which."""


# In an obstore error's debug text (its repr escapes the newlines):
# `InvalidCertificate(\n UnknownIssuer`.
_CERTIFICATE_PROBLEM = re.compile(r"InvalidCertificate\((?:\\n|\s)*(\w+)")


def untrusted(url: str, err: BaseException) -> UntrustedCertificateError:
    found = _CERTIFICATE_PROBLEM.search(repr(err))
    why = found.group(1) if found else error_detail(err)
    return UntrustedCertificateError(
        f"The TLS certificate of the server of {url} is not trusted ({why}). For a private CA "
        f"or a self-signed certificate, point SSL_CERT_FILE at the CA's PEM file "
        f"(REQUESTS_CA_BUNDLE is not read).")


ErrorKind = Literal["missing", "denied", "untrusted", "unreachable", "dropped", "stalled"]


def error_detail(err: BaseException) -> str:
    """The most telling line of a client error (SDK messages append pages of debug text): an OS
    error message it wraps if there is one (``Connection refused``), else its first line."""
    text = str(err)
    found = re.search(r'message: "([^"]+)"', text)
    if found:
        return found.group(1)
    return text.strip().split("\n", 1)[0] or type(err).__name__


def _unreachable(url: str, err: BaseException) -> RemoteUnreachableError:
    return RemoteUnreachableError(f"Could not connect to the server of {url}: {error_detail(err)}")


def _dropped(url: str, err: BaseException) -> ConnectionDroppedError:
    return ConnectionDroppedError(
        f"The connection was lost while transferring {url}: {error_detail(err)}")


def _stalled(url: str, err: BaseException) -> TransferStalledError:
    return TransferStalledError(f"Nothing arrived for the stall timeout while transferring {url}"
                                f" (set STREAMING_STALL_TIMEOUT to change it): "
                                f"{error_detail(err)}")


CONNECTION_ERRORS: dict[str, Callable[[str, BaseException], Exception]] = {
    "unreachable": _unreachable, "dropped": _dropped, "stalled": _stalled}
