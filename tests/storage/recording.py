"""`recording://`: a memory store for sink tests that logs upload order and can be slowed or fail.

Registered through the public `register_store`, which is the seam a third-party backend uses too.
"""

from __future__ import annotations

import threading
import time

from streaming.storage import register_store
from streaming.storage.memory import MemoryStore

EVENTS: list[str] = []
DELAYS: dict[str, float] = {}  # basename -> seconds to sleep before storing
GATES: dict[str, threading.Event] = {}  # basename -> event an upload waits for before storing
FAILURES: dict[str, type[Exception]] = {}  # basename -> error raised on every attempt
ATTEMPTS: dict[str, int] = {}
_LOCK = threading.Lock()


def reset() -> None:
    with _LOCK:
        EVENTS.clear()
        DELAYS.clear()
        GATES.clear()
        FAILURES.clear()
        ATTEMPTS.clear()


class RecordingStore(MemoryStore):
    scheme = "recording"

    def upload(self, local_path: str, path: str) -> None:
        name = path.rsplit("/", 1)[-1]
        with _LOCK:
            ATTEMPTS[name] = ATTEMPTS.get(name, 0) + 1
        time.sleep(DELAYS.get(name, 0))
        gate = GATES.get(name)
        if gate is not None and not gate.wait(300):
            raise TimeoutError(f"the test never opened the gate of {name}")
        if name in FAILURES:
            raise FAILURES[name](f"injected failure for {name}")
        super().upload(local_path, path)
        with _LOCK:
            EVENTS.append(path)


register_store("recording", "tests.storage.recording:RecordingStore")
