"""A real S3 server on 127.0.0.1 for the documentation examples (tests/docs/test_doc_examples.py).

The examples name the bucket `bucket` (`s3://bucket/my-dataset`), so the server is started with
that bucket and the URLs run as written: only `S3_ENDPOINT_URL` (and the AWS test credentials)
point them at it, as `docs/storage.md` says a user would. The pattern is `tests/storage`'s
(`conftest.py`, `servers.py`): start once per session, skip with the reason when the server
cannot run here, stop in teardown.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from streaming.storage import testing


@pytest.fixture(scope="session")
def doc_s3() -> Iterator[testing.S3Server]:
    """moto's S3 server with the bucket the docs name; stopped at the end of the session."""
    try:
        server = testing.start_moto(bucket="bucket")
    except testing.ServerUnavailable as err:
        pytest.skip(str(err))
    requests = logging.getLogger("werkzeug")  # one INFO line per request, in every failure
    level = requests.level
    requests.setLevel(logging.WARNING)
    try:
        yield server
    finally:
        server.stop()
        requests.setLevel(level)

