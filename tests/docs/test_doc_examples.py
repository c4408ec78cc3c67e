"""The ```python blocks of README.md and docs/*.md run, so the docs stay true.

Each markdown file's blocks run in order in one fresh interpreter (a block may use what an
earlier one built: README's `loader.state_dict()` uses the loader of its "Read" block), with the
blocks as written except for the small, explicit tables of `doc_tables.py`:

- `ROOTS`: absolute placeholder paths (`/data/...`, `/tmp/cache`, `/mnt/...`) move under the
  test's folder; relative paths (`data/*.parquet`, `logs/metrics.jsonl`) resolve in the
  process's working folder, also the test's.
- `s3://bucket/...` runs as written against moto's S3 server on 127.0.0.1 with a bucket named
  `bucket` (conftest.py), reached through `S3_ENDPOINT_URL` and test credentials. Datasets a
  block reads but no block writes are written first (`doc_data.py`).
- `PRELUDES` define what a block leaves to the reader (`df`, `my_slice(rank, world_size)`,
  `load_dataset("...")`); `SUBSTITUTIONS` replace elided arguments or digests only the real file
  can have (`$name` is a fact of the seeded data); each must still match its block, so the table
  cannot go stale silently. `MODULES` writes the part of a block that the doc labels as its own file (`# mystore.py`).
- `SKIP`: blocks that cannot run here, with the reason; `NEEDS`: optional packages or binaries
  a block needs, checked when the test runs (a missing one skips that block only);
  `XFAIL`: blocks that are wrong as documented (strict: fixing the doc makes the test fail
  until the entry is removed).

Blocks no table knows run as written. Like a script, each block's functions and classes (with
the block's imports, when it has any) stay at module level and its other statements run under
`if __name__ == "__main__":`, so processes the converters spawn (which import the main script)
find the functions and do not run the examples again.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from streaming.storage import testing
from tests.docs.doc_data import doc_env, seed_local, seed_s3
from tests.docs.doc_tables import (
    MODULES,
    NEEDS,
    PRELUDES,
    ROOTS,
    SKIP,
    SUBSTITUTIONS,
    XFAIL,
    Key,
)

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 480  # seconds for one markdown file's blocks on a loaded 2-core machine

# ---- the blocks ----------------------------------------------------------------------------

_FENCE = re.compile(r"^([ \t]*)```python[^\n]*\n(.*?)^\1```[ \t]*$", re.M | re.S)


def doc_files() -> list[str]:
    return ["README.md", *sorted(p.relative_to(REPO).as_posix()
                                 for p in (REPO / "docs").glob("*.md"))]


def python_blocks(doc: str) -> list[str]:
    """The ```python blocks of `doc`, in order, dedented to their fence."""
    text = (REPO / doc).read_text(encoding="utf-8")
    blocks = []
    for match in _FENCE.finditer(text):
        indent, body = match.group(1), match.group(2)
        lines = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                 for line in body.splitlines()]
        blocks.append("\n".join(lines) + "\n")
    return blocks


def missing_needs(key: Key) -> list[str]:
    missing = []
    for need in NEEDS.get(key, ()):
        if need == "java":
            found: Any = shutil.which("java")
        elif need == "weed":
            found = testing.find_weed()
        else:
            found = importlib.util.find_spec(need)
        if not found:
            missing.append(need)
    return missing


@dataclass
class Block:
    key: Key
    source: str  # after the tables' rewrites: what runs (module part excluded)
    prelude: str = ""
    module: tuple[str, str] | None = None  # (file name, source)


def rewrite(key: Key, source: str, root: Path, facts: dict[str, Any]) -> Block:
    roots = "|".join(ROOTS)
    source = re.sub(rf"(?<=[\"'])/({roots})(?=/)", lambda m: f"{root}/{m.group(1)}", source)
    for old, new in SUBSTITUTIONS.get(key, []):
        assert old in source, f"{key}: the substitution {old!r} no longer matches the block"
        source = source.replace(old, string.Template(new).safe_substitute(facts))
    module = None
    if key in MODULES:
        name, marker, helpers = MODULES[key]
        head, found, tail = source.partition(marker)
        assert found, f"{key}: the module marker {marker!r} no longer matches the block"
        module = (name, textwrap.dedent(helpers).lstrip() + "\n\n" + head)
        source = found + tail
    return Block(key, source, textwrap.dedent(PRELUDES.get(key, "")).strip(), module)


_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def split_block(source: str) -> tuple[list[str], list[str]]:
    """(module-level lines, lines to run under the main guard), statement by statement."""
    tree = ast.parse(source)
    lines = source.splitlines()
    # Imports stay at module level only for a block's own functions and classes; otherwise
    # they run in the main process alone (spawned workers need not import Ray or Spark).
    defines = any(isinstance(node, _DEFINITIONS[2:]) for node in tree.body)
    kinds = _DEFINITIONS if defines else _DEFINITIONS[2:]
    top: list[str] = []
    main: list[str] = []
    previous_end = 0
    for node in tree.body:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or node.lineno
        if start <= previous_end:  # `a; b` on one line: goes with the first statement
            continue
        segment = lines[previous_end:end]  # comments above a statement go with it
        (top if isinstance(node, kinds) else main).extend(segment)
        previous_end = end
    return top, main


HARNESS = '''\
import json as _json
import sys as _sys
import time as _time
import traceback as _traceback

_RESULTS = {}
_STARTED = {}


def _doc_start(number):
    _STARTED[number] = _time.monotonic()
    print(f"@@ block {number}", file=_sys.stderr, flush=True)


def _doc_done(number, error):
    _RESULTS[number] = {"error": error, "seconds": _time.monotonic() - _STARTED[number]}
    with open(RESULTS_FILE, "w") as f:
        _json.dump(_RESULTS, f)
'''


def build_script(blocks: list[Block], results_file: Path) -> str:
    parts = [HARNESS, f"RESULTS_FILE = {str(results_file)!r}\n"]
    for block in blocks:
        number = block.key[1]
        top, main = split_block(block.source)
        body = [*(block.prelude.splitlines()), *main] or ["pass"]
        top_code = textwrap.indent("\n".join(top), "    ") if top else "    pass"
        on_error = "" if block.key in XFAIL else "    raise SystemExit(3)\n"
        parts.append(
            f"\n# ---- {block.key[0]}, block {number} ----\n"
            f"if __name__ == '__main__':\n    _doc_start({number})\n"
            f"try:\n{top_code}\n"
            f"    if __name__ == '__main__':\n"
            f"{textwrap.indent(chr(10).join(body), '        ')}\n"
            f"except Exception:\n"
            f"    if __name__ != '__main__':\n        raise\n"
            f"    _doc_done({number}, _traceback.format_exc())\n{on_error}"
            f"else:\n    if __name__ == '__main__':\n        _doc_done({number}, None)\n")
    return "".join(parts)


# ---- running one markdown file --------------------------------------------------------------

@dataclass
class Run:
    blocks: dict[int, Block]
    results: dict[int, dict[str, Any]]
    script: str
    stderr: str
    returncode: int | None
    seconds: float
    skipped: dict[int, str] = field(default_factory=dict)


def skip_reason(key: Key) -> str | None:
    if key in SKIP:
        return SKIP[key]
    missing = missing_needs(key)
    if missing:
        return f"needs {', '.join(missing)} (not installed here)"
    return None


def run_doc(doc: str, s3: testing.S3Server, facts: dict[str, Any], base: Path) -> Run:
    root, work = base / "root", base / "work"
    root.mkdir()
    work.mkdir()
    seed_local(root, work)
    blocks: dict[int, Block] = {}
    skipped: dict[int, str] = {}
    for number, source in enumerate(python_blocks(doc), 1):
        reason = skip_reason((doc, number))
        if reason:
            skipped[number] = reason
            continue
        block = rewrite((doc, number), source, root, facts)
        if block.module:
            (work / block.module[0]).write_text(block.module[1])
        blocks[number] = block
    results_file = base / "results.json"
    script = build_script(list(blocks.values()), results_file)
    (work / "doc_examples.py").write_text(script)
    ray_tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    start = time.monotonic()
    with open(base / "stdout", "wb") as out, open(base / "stderr", "wb") as err:
        proc = subprocess.Popen([sys.executable, "doc_examples.py"], cwd=work,
                                env=doc_env(s3, root, ray_tmp), stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            returncode: int | None = proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            try:  # the process and whatever it started in its session (Spark's JVM, Ray)
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            shutil.rmtree(ray_tmp, ignore_errors=True)
    seconds = time.monotonic() - start
    results = ({int(k): v for k, v in json.loads(results_file.read_text()).items()}
               if results_file.exists() else {})
    stderr = (base / "stderr").read_text(errors="replace")
    return Run(blocks, results, script, stderr, returncode, seconds, skipped)


@pytest.fixture(scope="session")
def doc_runs(doc_s3: testing.S3Server, tmp_path_factory: pytest.TempPathFactory) -> Any:
    facts = seed_s3(doc_s3, tmp_path_factory.mktemp("s3-seed"))
    runs: dict[str, Run] = {}

    def get(doc: str) -> Run:
        if doc not in runs:
            runs[doc] = run_doc(doc, doc_s3, facts, tmp_path_factory.mktemp("doc"))
        return runs[doc]

    return get


def _params() -> list[Any]:
    params = []
    for doc in doc_files():
        for number in range(1, len(python_blocks(doc)) + 1):
            marks = []
            if (doc, number) in XFAIL:
                why, error = XFAIL[(doc, number)]
                marks = [pytest.mark.xfail(strict=True, raises=AssertionError,
                                           reason=f"{why} ({error})")]
            params.append(pytest.param(doc, number, id=f"{doc}-{number}", marks=marks))
    return params


def _tail(text: str, limit: int = 12_000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


@pytest.mark.slow
@pytest.mark.timeout(TIMEOUT + 120)
@pytest.mark.parametrize(("doc", "number"), _params())
def test_doc_block(doc: str, number: int, doc_runs: Any) -> None:
    reason = skip_reason((doc, number))
    if reason:
        pytest.skip(reason)
    run: Run = doc_runs(doc)
    block = run.blocks[number]
    shown = "\n".join(filter(None, [
        f"--- prelude ---\n{block.prelude}" if block.prelude else "",
        f"--- module {block.module[0]} ---\n{block.module[1]}" if block.module else "",
        f"--- block (rewritten) ---\n{block.source}"]))
    result = run.results.get(number)
    if result is None:
        failed_first = [n for n, r in sorted(run.results.items())
                        if r["error"] and (doc, n) not in XFAIL]
        why = (f"not run: block {failed_first[0]} of {doc} failed first" if failed_first else
               f"the process ended before the block finished (exit code {run.returncode}, "
               f"{run.seconds:.0f} s; None means killed at the {TIMEOUT} s timeout)")
        pytest.fail(f"{doc} block {number}: {why}\n{shown}\n--- stderr ---\n{_tail(run.stderr)}")
    if (doc, number) in XFAIL and result["error"]:
        expected = XFAIL[(doc, number)][1]
        if expected not in result["error"]:
            pytest.fail(f"{doc} block {number} failed, but not with {expected!r} as XFAIL "
                        f"expects:\n{result['error']}\n{shown}", pytrace=False)
    assert result["error"] is None, (
        f"{doc} block {number} raised:\n{result['error']}\n{shown}\n"
        f"--- stderr of the process ---\n{_tail(run.stderr)}")
    if number == max(run.blocks):  # all ran: the process must also have ended cleanly
        assert run.returncode == 0, (
            f"{doc}: every block ran but the process ended with {run.returncode} "
            f"after {run.seconds:.0f} s\n--- stderr ---\n{_tail(run.stderr)}")
