"""How long a transfer waits for its next byte: the stall timeout, or longer once it stalled.

A connection that died without a word never errors, so every store gives up on a response
that sends nothing for the stall timeout (`STREAMING_STALL_TIMEOUT`, 5 s) and the transfer is
tried again at once, usually on a healthy connection. A server that is alive but slow to
answer (an S3 gateway under load, a file assembled on request) looks the same for those
seconds, and failed every attempt where the reference's clients, waiting up to 60 s, got the
object. So the attempts after a stalled one run patiently (`patiently`, set by
`streaming.storage.transfer.call_with_retries`): each store then waits up to `PATIENT_WAIT`
for the next byte, still within the attempt's own `download_timeout`. Not the reference's
60 s: a server that died mid-answer then costs whoever waits on it (`dataset[i]`, a shard the
epoch needs next) 20 s per patient attempt, not a minute.

The flag is a context variable: it follows the attempt into the helper thread that runs it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from streaming.defaults import STALL_TIMEOUT

__all__ = ["PATIENT_WAIT", "is_patient", "patiently", "read_wait", "stall_timeout"]

#: Seconds a patient attempt waits for the next byte: a server four times slower to answer than
#: the stall timeout allows (see the module docstring for why not 60 s).
PATIENT_WAIT = 20.0

_patient: ContextVar[bool] = ContextVar("shardstream_patient_transfer", default=False)


def stall_timeout() -> float:
    """Seconds without data after which a transfer is dead (`STREAMING_STALL_TIMEOUT`)."""
    return float(os.environ.get("STREAMING_STALL_TIMEOUT") or STALL_TIMEOUT)


def is_patient() -> bool:
    """Whether the transfer running in this context already stalled once."""
    return _patient.get()


def read_wait(stall: float) -> float:
    """The wait for the next byte now, for a store whose stall timeout is `stall`."""
    return max(stall, PATIENT_WAIT) if _patient.get() else stall


@contextmanager
def patiently() -> Iterator[None]:
    """Run the block's transfers with the patient wait."""
    token = _patient.set(True)
    try:
        yield
    finally:
        _patient.reset(token)
