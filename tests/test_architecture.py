"""docs/architecture.md tells the truth: the modules it names exist, and rooms import only what
their row allows."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"

LEAVES = {"errors", "defaults", "units", "atomic", "hashing", "progress", "retries", "_version",
          "allocator", "lazy_names", "launch_env", "regular_files"}
PARTS = {"catalog", "iteration", "epoch_reads", "checkpoint", "dataset_config", "dataset_doc",
         "dataset_fields", "collate", "batch_columns", "batch_ring", "prefetch", "latest_iteration",
         "default_notices"}
COMPOSITION = {"stream", "stream_weights", "dataset", "dataset_setup", "dataset_cache",
               "dataset_lifecycle", "dataset_views", "loader", "loader_batched", "loader_workers",
               "local"}
TOP = {"merge", "convert", "cli", "__main__"}
COMPAT = {"base", "vision", "text", "multimodal"}

# room -> the in-house rooms it may import (the "may import" column of docs/architecture.md).
ALLOWED: dict[str, set[str]] = {
    **{leaf: {"errors"} for leaf in LEAVES},
    "order": {"errors", "launch_env"},  # World.detect, the one place that reads the launch
    "storage": LEAVES,
    "coord": LEAVES,
    "format": LEAVES | {"array", "storage"},
    "cache": LEAVES | {"coord", "format", "storage", "order", "metrics"},
    "metrics": LEAVES,
    "array": LEAVES,
    "spanner": LEAVES,
    "plugins": LEAVES,
    **{part: LEAVES | {"order", "storage", "coord", "format", "cache", "array", "spanner",
                       "metrics"} | PARTS for part in PARTS},
    **{mod: LEAVES | {"order", "storage", "coord", "format", "cache", "array", "spanner",
                      "plugins", "metrics"} | PARTS | COMPOSITION for mod in COMPOSITION},
    "simulate": LEAVES | {"order", "cache", "format", "storage", "prefetch"},
    "merge": LEAVES | {"format", "storage"},
    "convert": LEAVES | {"format", "storage", "merge", "cache", "coord"},
    "cli": LEAVES | {"order", "storage", "coord", "format", "cache", "merge", "convert", "cli",
                     "metrics", "simulate"}
    | PARTS | COMPOSITION,
    "__main__": {"cli"},
    # the package's lazy public names (`index_parquet` lives in convert/)
    "streaming": {"_version", "lazy_names"} | COMPOSITION | {"format", "convert"},
}


def _room(module: str) -> str:
    parts = module.split(".")
    return "streaming" if len(parts) == 1 else parts[1]


def _imports() -> dict[str, set[tuple[str, str]]]:
    """room -> {(importing file, imported room)} over every in-house import in the package."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path in (ROOT / "streaming").rglob("*.py"):
        rel = path.relative_to(ROOT)
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name == "streaming" or name.startswith("streaming."):
                    found.setdefault(_room(module), set()).add((str(rel), _room(name)))
    return found


def test_every_module_named_in_the_architecture_doc_exists() -> None:
    named = set(re.findall(r"`(streaming/\w[\w/.]*)`", DOC.read_text()))
    assert len(named) > 30  # the table really names the house
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_room_of_the_package_is_in_the_rules() -> None:
    rooms = {_room(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"))
             for p in (ROOT / "streaming").rglob("*.py")}
    assert not rooms - set(ALLOWED) - COMPAT, "a new room needs a row in docs/architecture.md"


@pytest.mark.parametrize("room", sorted(set(ALLOWED)))
def test_rooms_import_only_what_the_doc_allows(room: str) -> None:
    bad = sorted(f"{path} imports streaming.{target}"
                 for path, target in _imports().get(room, set())
                 if target != room and target not in ALLOWED[room])
    assert not bad, bad


def test_only_shard_groups_of_convert_reaches_the_cache() -> None:
    reaching = sorted(path for path, target in _imports().get("convert", set())
                      if target == "cache")
    assert reaching == ["streaming/convert/shard_groups.py"]


def test_only_the_writer_of_format_reaches_storage() -> None:
    reaching = sorted(path for path, target in _imports().get("format", set())
                      if target == "storage")
    assert reaching == ["streaming/format/writer.py"]


def test_every_error_we_raise_derives_from_streaming_error() -> None:
    import importlib
    import inspect
    import pkgutil

    import streaming
    from streaming.errors import StreamingError

    internal = {"_SameProcess", "ServerUnavailable"}  # never escape to users / test servers only
    stray = set()
    for info in pkgutil.walk_packages(streaming.__path__, "streaming."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional SDK that is not installed
            continue
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__ == info.name
                    and not issubclass(obj, (StreamingError, Warning)) and name not in internal):
                stray.add(f"{info.name}.{name}")
    assert not stray, sorted(stray)
