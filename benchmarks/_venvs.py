"""Locate or create the scratch interpreters the benchmarks compare against.

Two venvs live under `<repo>/.bench/venvs/` (gitignored), never in the project's dependencies:
`reference` (mosaicml-streaming 0.13.0) and `litdata`. An env var may point at an existing
interpreter instead. Creation is serialised by a file lock so concurrent benchmarks share it.
Also the small helpers every comparison shares: a library's environment and CPU hogs.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENVS = REPO / ".bench" / "venvs"
# torchvision from PyPI only imports next to its own torch, and both libraries pull torchvision
# in, so each venv gets the matching pair from the machine's local wheels first.
_TORCH_PAIR = ["torch==2.14.1", "torchvision==0.29.1"]


@dataclass(frozen=True)
class VenvSpec:
    """How to build and recognise one comparison interpreter."""

    name: str
    env_var: str
    install_steps: tuple[tuple[str, ...], ...]
    check: str  # Python code that exits non-zero when the venv is not usable


SPECS = {
    "reference": VenvSpec(
        "reference",
        "STREAMING_BENCH_REFERENCE_PYTHON",
        (tuple(_TORCH_PAIR), ("mosaicml-streaming==0.13.0", "filelock<3.30")),
        "import streaming, sys; sys.exit(streaming.__version__ != '0.13.0'"
        " or hasattr(streaming, '__shardstream_version__'))",
    ),
    "litdata": VenvSpec(
        "litdata",
        "STREAMING_BENCH_LITDATA_PYTHON",
        (tuple(_TORCH_PAIR), ("litdata",)),
        "import litdata",
    ),
    # litdata's Parquet path needs polars and pyarrow, in a venv of its own: with pyarrow
    # importable, litdata's 100 KB image reads ran at 1.9-2.1 GB/s instead of 4.6 (measured
    # 2026-11-25), which would skew the runtime comparison against it.
    "litdata_parquet": VenvSpec(
        "litdata_parquet",
        "STREAMING_BENCH_LITDATA_PARQUET_PYTHON",
        (tuple(_TORCH_PAIR), ("litdata", "polars", "pyarrow")),
        "import litdata, polars, pyarrow",
    ),
    "hfdatasets": VenvSpec(  # Hugging Face `datasets`, for the Parquet comparison
        "hfdatasets",
        "STREAMING_BENCH_HF_PYTHON",
        (("torch==2.13.0",), ("datasets",)),
        "import datasets, torch",
    ),
}


@dataclass(frozen=True)
class Located:
    """An interpreter path, or None with the reason it is unavailable."""

    python: str | None
    reason: str = ""


def _usable(python: str, spec: VenvSpec) -> str:
    """Empty string when `python` passes the spec's check, else why not."""
    if not os.access(python, os.X_OK):
        return f"{python} is not executable"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        proc = subprocess.run([python, "-c", spec.check], capture_output=True, text=True,
                              env=env, cwd="/", timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python}: {exc}"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["check failed"])[-1]
        return f"{python}: {tail}"
    return ""


def _create(spec: VenvSpec, root: Path) -> str:
    """Build the venv at root; returns an error description or ''."""
    log = root.with_suffix(".log")
    say = f"[bench] creating the {spec.name} venv in {root} (several minutes; log {log})"
    print(say, file=sys.stderr, flush=True)
    steps = [[sys.executable, "-m", "venv", "--clear", str(root)]]
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "-q"]
    steps += [pip + list(step) for step in spec.install_steps]
    with open(log, "w") as out:
        for cmd in steps:
            out.write("$ " + " ".join(cmd) + "\n")
            out.flush()
            if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                return f"`{' '.join(cmd[3:])}` failed (see {log})"
    (root / ".ready").touch()
    return ""


def locate(name: str, create: bool = True) -> Located:
    """The interpreter for venv `name`: env override, then an existing venv, then a new one."""
    spec = SPECS[name]
    override = os.environ.get(spec.env_var)
    if override:
        override = os.path.abspath(override)  # the processes run in other directories
        why = _usable(override, spec)
        return Located(None, f"{spec.env_var}: {why}") if why else Located(override)
    root = VENVS / name
    python = str(root / "bin" / "python")
    VENVS.mkdir(parents=True, exist_ok=True)
    with open(VENVS / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".ready").exists():
            if not create:
                return Located(None, f"no {name} venv at {root} and creation disabled")
            why = _create(spec, root)
            if why:
                return Located(None, why)
    why = _usable(python, spec)
    return Located(None, why) if why else Located(python)


if __name__ == "__main__":  # `python benchmarks/_venvs.py reference litdata` prepares them
    for arg in sys.argv[1:] or list(SPECS):
        found = locate(arg)
        print(f"{arg}: {found.python or 'unavailable: ' + found.reason}")


def library_env(impl: str, workdir: str) -> dict[str, str]:
    """A measured library's environment: ours on PYTHONPATH (nobody else's), and a TMPDIR
    private to the run, so lock and registry files of unrelated jobs of this user (test suites
    running meanwhile) cannot contend with it, as on a training node running one job."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if impl == "ours":
        env["PYTHONPATH"] = str(REPO)
    env["TMPDIR"] = os.path.join(workdir, "tmp")
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return env


@contextmanager
def hogs(count: int) -> Iterator[None]:
    """`count` busy-loop processes running meanwhile: a machine whose cores other jobs load."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
