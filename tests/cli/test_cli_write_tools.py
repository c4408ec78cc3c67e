"""`streaming convert`, `merge-index`, `plan`, `clean`, and the command line as a whole."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.cli.conftest import REPO

COMMANDS = ["convert", "inspect", "validate", "head", "merge-index", "bench", "plan", "clean"]


def test_help_everywhere_and_usage_errors(cli: Callable) -> None:
    top = cli("--help")
    assert top.code == 0 and all(name in top.out for name in COMMANDS)
    for name in COMMANDS:
        run = cli(name, "--help")
        assert run.code == 0 and "--json" in run.out, name
    assert cli("frobnicate").code == 2
    assert cli("inspect").code == 2  # missing DATASET


def test_convert_jsonl_with_overrides_then_errors(cli: Callable, tmp_path: Any) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_text('{"id": 1, "t": "x"}\n{"id": 2, "t": "y"}\n')
    (src / "b.jsonl").write_text('{"id": 3, "t": "z"}\n')
    run = cli("convert", str(src), str(tmp_path / "out"), "--column", "id=uint8",
              "--workers", "0", "--hashes", "xxh64", "--json")
    assert run.code == 0, run.err
    # Two small files share one task: one dataset, no sub-datasets.
    assert run.json()["samples"] == 3 and run.json()["partitions"] == []
    info = cli("inspect", str(tmp_path / "out"), "--json").json()
    assert info["columns"] == {"id": "uint8", "t": "str"} and info["hashes"] == ["xxh64"]
    assert cli("validate", str(tmp_path / "out")).code == 0
    again = cli("convert", str(src), str(tmp_path / "out"), "--workers", "0")
    assert again.code == 1 and "Directory is not empty" in again.err
    assert cli("convert", str(src), str(tmp_path / "o2"), "--column", "id").code == 2
    assert cli("convert", str(src), str(tmp_path / "o3"), "--format", "xml").code == 2
    bad = cli("convert", str(src), str(tmp_path / "o4"), "--column", "nope=int")
    assert bad.code == 1 and "'nope'" in bad.err


def test_convert_image_folder_to_a_remote_url(cli: Callable, tmp_path: Any) -> None:
    from PIL import Image

    for cls in ("a", "b"):
        (tmp_path / "imgs" / cls).mkdir(parents=True)
        Image.new("RGB", (4, 4)).save(tmp_path / "imgs" / cls / "0.png")
    remote = f"file://{tmp_path}/remote"
    run = cli("convert", str(tmp_path / "imgs"), remote, "--workers", "0", "--json")
    assert run.code == 0, run.err
    assert run.json()["classes"] == ["a", "b"] and run.json()["remote"] == remote
    head = cli("head", remote, "--json").json()["samples"]
    assert [s["y"] for s in head] == [0, 1] and head[0]["x"]["image"] == "PNG"


def test_merge_index_command(cli: Callable, tmp_path: Any) -> None:
    from streaming import MDSWriter

    root = tmp_path / "root"
    for name, ids in (("p0", range(3)), ("p1", range(3, 5))):
        with MDSWriter(out=str(root / name), columns={"id": "int"}) as writer:
            for i in ids:
                writer.write({"id": i})
    (root / "p2").mkdir()
    (root / "p2" / "shard.00000.mds").write_bytes(b"half")  # a writer that died
    run = cli("merge-index", str(root), "--json")
    assert run.code == 0 and run.json()["partitions"] == ["p0", "p1"]
    assert "p2" in run.json()["skipped"] and run.json()["samples"] == 5
    with MDSWriter(out=str(root / "p3"), columns={"id": "int"}) as writer:
        writer.write({"id": 5})
    rerun = cli("merge-index", str(root), "--strict")
    assert rerun.code == 1 and "p2" in rerun.out + rerun.err
    # A gate that fails writes nothing: the index is still the first merge's (no p3).
    assert cli("inspect", str(root), "--json").json()["samples"] == 5
    assert cli("merge-index", str(root), "--no-keep-local").code == 2
    assert cli("merge-index", str(tmp_path / "empty")).code == 1


def test_plan_shows_each_worker_and_resumption(cli: Callable) -> None:
    args = ["plan", "--shard-sizes", "40,40,20", "--nodes", "2", "--ranks-per-node", "2",
            "--workers", "2", "--batch-size", "4", "-k", "100", "--shuffle", "--json"]
    plan = cli(*args).json()
    workers = plan["workers"]
    assert len(workers) == 8 and {w["rank"] for w in workers} == {0, 1, 2, 3}
    seen = sorted(i for w in workers for i in w["ids"])
    assert seen == list(range(100))  # every sample exactly once this epoch
    resumed = cli(*args, "--sample-in-epoch", "16").json()["workers"]
    # One global batch (2 nodes x 2 ranks x 4) consumed: each rank's first batch is skipped.
    assert sorted(i for w in resumed for i in w["ids"]) == sorted(
        set(seen) - {i for w in workers if w["worker"] == 0 for i in w["ids"][:4]})
    text = cli("plan", "--shard-sizes", "5,5", "--batch-size", "2", "-k", "3")
    assert text.code == 0 and "rank 0 (node 0) worker 0: 0 1 2" in text.out
    assert cli("plan", "--batch-size", "2").code == 2  # neither DATASET nor --shard-sizes
    assert cli("plan", "--shard-sizes", "a,b", "--batch-size", "2").code == 2


def test_clean_reports_what_it_removed(cli: Callable, tmp_path: Any) -> None:
    from streaming.coord.records import ensure_state_dir

    state = ensure_state_dir(str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = os.path.join(state, f"ss_x.json.tmp.{dead.pid}")
    open(leftover, "w").close()
    run = cli("clean", "--json")
    assert run.code == 0 and os.path.realpath(leftover) in [os.path.realpath(p) for p in
                                                           run.json()["removed"]]
    assert not os.path.exists(leftover)
    assert run.err == ""  # the list is the output; no log line repeats it
    again = cli("clean", "--json").json()["removed"]
    assert os.path.realpath(leftover) not in [os.path.realpath(p) for p in again]


def test_library_never_loads_the_cli_and_missing_click_says_what_to_install() -> None:
    code = "import sys, streaming; print('streaming.cli' in sys.modules, 'click' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.split() == ["False", "False"]
    code = "import sys; sys.modules['click'] = None; from streaming.cli import main; main([])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 1 and "pip install 'shardstream[cli]'" in out.stderr


@pytest.mark.parametrize("argv", [["--version"]])
def test_main_in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from streaming.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0 and "streaming" in capsys.readouterr().out


def test_convert_refuses_an_output_that_holds_its_input(cli: Callable, tmp_path: Any) -> None:
    """`--exist-ok` used to clear OUT first, and OUT held the input: the whole folder, input
    included, was deleted and no dataset written."""
    raw = tmp_path / "proj" / "raw"
    raw.mkdir(parents=True)
    (raw / "a.jsonl").write_text('{"id": 1}\n{"id": 2}\n')
    for out in (tmp_path / "proj", raw):
        run = cli("convert", "--no-progress", "--exist-ok", str(raw / "a.jsonl"), str(out))
        assert run.code == 1 and "holds the input" in run.err and "delete it" in run.err
        assert "Traceback" not in run.err
        assert (raw / "a.jsonl").read_text() == '{"id": 1}\n{"id": 2}\n'
    ok = cli("convert", "--no-progress", "--exist-ok", str(raw), str(tmp_path / "out"))
    assert ok.code == 0, ok.err


def test_convert_says_when_out_is_a_file(cli: Callable, tmp_path: Any) -> None:
    """The usual slip: OUT left out, so the last input is taken as OUT."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text('{"id": 1}\n')
    run = cli("convert", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert run.code == 1 and "is a file, not a directory" in run.err
    assert "Traceback" not in run.err and (tmp_path / "b.jsonl").read_text() == '{"id": 1}\n'
