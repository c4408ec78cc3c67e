"""Two jobs whose TMPDIRs differ over one cache directory: the claims in /dev/shm see it."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from coord_workers import hold_namespace

from streaming.coord import open_namespace
from streaming.coord.cache_claims import PRUNE_ABOVE, PRUNE_AFTER, claim_caches, claims_dir
from streaming.coord.names import local_index_path
from streaming.coord.records import ensure_state_dir
from streaming.errors import ReusedLocalError

JOB_A = {"WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1111", "RANK": "0"}
JOB_B = {**JOB_A, "MASTER_PORT": "2222"}

pytestmark = pytest.mark.skipif(claims_dir() is None, reason="no writable /dev/shm")


def _hold(tmp: str, local: str, remote: str | None, env: dict) -> mp.Process:
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=hold_namespace, args=(tmp, local, remote, env, there))
    proc.start()
    assert here.poll(60), "holder did not start"
    here.recv()
    return proc


def _kill(proc: mp.Process) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()


@pytest.mark.parametrize("env", [JOB_B, JOB_A], ids=["other job", "same job key"])
def test_a_live_dataset_under_another_tmpdir_is_refused(coord_tmp: str, tmp_path,
                                                        env: dict) -> None:
    """The per-TMPDIR registry alone let both in: SLURM gives each job its own TMPDIR. Ranks
    of one job under different TMPDIRs could not coordinate either (they never meet)."""
    other_tmp = tmp_path / "other-tmp"
    other_tmp.mkdir()
    local = str(tmp_path / "cache")
    holder = _hold(str(other_tmp), local, "s3://b/d", JOB_A)
    try:
        with pytest.raises(ReusedLocalError, match=r"^Reused local directory: .*Provide a "
                           r"different one\..*another job.*their TMPDIRs differ") as err:
            open_namespace([local], ["s3://b/d"], env=env)
        assert str(other_tmp) in str(err.value) and str(holder.pid) in str(err.value)
        assert not err.value.same_process
        # A local-only dataset may share it, as with one TMPDIR (and in the reference).
        open_namespace([local], [None], env=env).close()
    finally:
        _kill(holder)
    open_namespace([local], ["s3://b/d"], env=env).close()  # the holder died: taken over


def test_datasets_under_one_tmpdir_are_judged_by_its_registry(coord_tmp: str, tmp_path) -> None:
    """Ranks of one job share a TMPDIR: the claim names their state dir, and they attach."""
    local = str(tmp_path / "cache")
    job = {**JOB_A, "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
    holder = _hold(coord_tmp, local, "s3://b/d", job)
    try:
        open_namespace([local], ["s3://b/d"], env={**job, "RANK": "1"}).close()
    finally:
        _kill(holder)


def _age_claims(directory: str, seconds: float) -> None:
    for name in os.listdir(directory):
        if name.endswith(".json"):
            path = os.path.join(directory, name)
            then = os.stat(path).st_mtime - seconds
            os.utime(path, (then, then))


def test_claims_of_dead_datasets_are_pruned(tmp_path) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    state_dir = ensure_state_dir(str(tmp_path))
    directory = claims_dir(str(shm))
    assert directory is not None
    for i in range(PRUNE_ABOVE + 6):  # datasets whose namespaces are gone
        claim_caches(state_dir, f"ss_0_dead{i}", [f"/caches/{i}"], shm_dir=str(shm))
    _age_claims(directory, PRUNE_AFTER + 1)
    claim_caches(state_dir, "ss_0_late", ["/caches/late"], shm_dir=str(shm))
    left = [n for n in os.listdir(directory) if n.endswith(".json")]
    assert len(left) == 1  # only the claim just written (its dataset has no record yet)
    with open(os.path.join(directory, left[0])) as f:
        assert json.load(f) == {"state_dir": state_dir, "namespace": "ss_0_late"}


def test_a_fresh_claim_survives_the_prune_it_triggers(tmp_path) -> None:
    """A dataset writes its claim before its record: pruning must not take the claim it has
    just written (the suite's /dev/shm held more than PRUNE_ABOVE claims, and a live dataset
    under another TMPDIR was let in), nor one another TMPDIR's dataset is still opening."""
    shm = tmp_path / "shm"
    shm.mkdir()
    state_dir = ensure_state_dir(str(tmp_path))
    directory = claims_dir(str(shm))
    assert directory is not None
    claim_caches(state_dir, "ss_0_opening", ["/caches/opening"], shm_dir=str(shm))
    for i in range(PRUNE_ABOVE + 1):
        claim_caches(state_dir, f"ss_0_dead{i}", [f"/caches/{i}"], shm_dir=str(shm))
    _age_claims(directory, PRUNE_AFTER + 1)
    claim_caches(state_dir, "ss_0_new", ["/caches/new"], shm_dir=str(shm))
    claims = set()
    for name in os.listdir(directory):
        if name.endswith(".json"):
            with open(os.path.join(directory, name)) as f:
                claims.add(json.load(f)["namespace"])
    assert claims == {"ss_0_new"}
    os.utime(os.path.join(directory, local_index_path(directory, "/caches/new")))
    for i in range(PRUNE_ABOVE + 1):  # young claims of datasets still opening: all kept
        claim_caches(state_dir, f"ss_0_young{i}", [f"/caches/y{i}"], shm_dir=str(shm))
    assert len([n for n in os.listdir(directory) if n.endswith(".json")]) == PRUNE_ABOVE + 2


def test_two_streaming_datasets_with_different_tmpdirs(tmp_path) -> None:
    """End to end, as two jobs would: the second job's dataset fails at construction."""
    from streaming import MDSWriter

    remote, local = str(tmp_path / "remote"), str(tmp_path / "cache")
    with MDSWriter(out=remote, columns={"v": "int"}) as writer:
        for i in range(10):
            writer.write({"v": i})
    script = textwrap.dedent(f"""
        import sys
        from streaming import StreamingDataset
        ds = StreamingDataset(remote={remote!r}, local={local!r}, batch_size=1)
        print("built", flush=True)
        sys.stdin.readline()
    """)
    jobs = []
    for name in ("a", "b"):
        tmp = tmp_path / f"tmp-{name}"
        tmp.mkdir()
        env = {**os.environ, "TMPDIR": str(tmp), "MASTER_PORT": str(3000 + len(jobs))}
        jobs.append(subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE))
        if name == "a":
            assert jobs[0].stdout is not None and jobs[0].stdout.readline() == "built\n"
    try:
        _, err = jobs[1].communicate(timeout=120)
        assert jobs[1].returncode != 0
        assert "ReusedLocalError: Reused local directory" in err and "TMPDIRs differ" in err
    finally:
        jobs[0].communicate("\n", timeout=120)
    assert jobs[0].returncode == 0
