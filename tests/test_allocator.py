"""glibc's thresholds for processes that receive batches (`streaming.allocator`).

Each case runs in a new interpreter: the thresholds are process-wide and set once.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Makes and drops "batches" of 160 values of 100 KB (16 MB) and prints the page faults of five
# of them after a first: a batch given back to the kernel faults in all over again.
_CYCLES = """
import resource, sys
{setup}
def cycle():
    batch = [b"x" * 100_000 for _ in range(160)]
    del batch
cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    cycle()
print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

_GLIBC = sys.platform == "linux" and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith(
    "glibc")
_SCRUBBED = ("STREAMING_MALLOC_TUNING", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
             "GLIBC_TUNABLES")


def _faults(setup: str, **env: str) -> tuple[str, int]:
    clean = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    out = subprocess.run([sys.executable, "-c", _CYCLES.format(setup=setup)],
                         env={**clean, **env}, capture_output=True, text=True, check=True)
    tuned, faults = out.stdout.split()
    return tuned, int(faults)


_TUNE = "from streaming.allocator import tune_for_batches\ntuned = tune_for_batches()"


@pytest.mark.skipif(not _GLIBC, reason="glibc's allocator only")
def test_batches_dropped_at_once_are_kept_for_the_next_without_page_faults() -> None:
    tuned, faults = _faults(_TUNE)
    assert tuned == "True"
    # 5 x 16 MB given back and faulted in again would be ~20,000 faults.
    assert faults < 500, faults


@pytest.mark.skipif(not _GLIBC, reason="glibc's allocator only")
def test_untuned_processes_fault_the_batches_in_again_which_is_why_it_exists() -> None:
    tuned, faults = _faults(_TUNE, STREAMING_MALLOC_TUNING="0")
    assert tuned == "False"
    assert faults > 5_000, faults


@pytest.mark.parametrize("setting", [{"MALLOC_TRIM_THRESHOLD_": "131072"},
                                     {"MALLOC_MMAP_THRESHOLD_": "131072"},
                                     {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"},
                                     {"STREAMING_MALLOC_TUNING": "0"}])
def test_the_users_own_allocator_settings_or_the_off_switch_are_left_alone(
        setting: dict[str, str]) -> None:
    tuned, _ = _faults(_TUNE, **setting)
    assert tuned == "False"


@pytest.mark.skipif(not _GLIBC, reason="glibc's allocator only")
def test_constructing_a_dataset_tunes_its_process(tmp_path: os.PathLike[str]) -> None:
    """Where batches arrive: the process that built the dataset (a plain DataLoader's too)."""
    from streaming import MDSWriter

    with MDSWriter(out=str(tmp_path), columns={"x": "int"}) as writer:
        writer.write({"x": 1})
    setup = ("from streaming import StreamingDataset\n"
             f"StreamingDataset(local={str(tmp_path)!r}, batch_size=1)\n"
             "from streaming import allocator\ntuned = allocator._done")
    tuned, faults = _faults(setup)
    assert tuned == "True" and faults < 500, (tuned, faults)
