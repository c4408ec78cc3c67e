"""`streaming.base._compat`: the reference's small helpers re-exported by `streaming.base.util`."""

from __future__ import annotations

import re
import threading
import time

import pytest

from streaming.base._compat import LEGACY_DOMAIN_DEFAULTS, core_arguments
from streaming.base.util import get_import_exception_message, wait_for_file_to_exist


def test_wait_returns_once_the_file_appears(tmp_path) -> None:
    target = tmp_path / "done"
    threading.Timer(0.05, target.write_text, args=("x",)).start()
    start = time.monotonic()
    wait_for_file_to_exist(str(target), poll_interval=0.01, timeout=60, err_msg="never: ")
    assert target.exists() and time.monotonic() - start < 30  # returned, not timed out


def test_wait_times_out_with_the_reference_message(tmp_path) -> None:
    pattern = r"^Index missing\. 0\.050 < 0\.\d{3} secs\.$"
    with pytest.raises(RuntimeError, match=pattern):
        wait_for_file_to_exist(str(tmp_path / "nope"), 0.01, 0.05, "Index missing. ")


def test_import_exception_message_names_the_extra() -> None:
    message = get_import_exception_message("spark", extra_deps="pyspark")
    assert "without spark support" in message
    assert re.search(r"pip install 'shardstream\[spark\]'", message)


def test_core_arguments_picks_exactly_the_shared_ones() -> None:
    namespace = {**LEGACY_DOMAIN_DEFAULTS, "self": object(), "transform": print}
    picked = core_arguments(namespace)
    assert picked == LEGACY_DOMAIN_DEFAULTS and "transform" not in picked
