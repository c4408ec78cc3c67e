"""A backend module whose client library does not exist (tests the missing-dependency error)."""

import shardstream_no_such_sdk  # noqa: F401
