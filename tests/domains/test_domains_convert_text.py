"""The text conversion scripts (`streaming.text.convert`): tiny Pile, EnWiki and C4 inputs
converted, then read back exactly (by us, and by the reference when its interpreter is here)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
import zstd

from streaming import StreamingDataset
from streaming.errors import MissingDependencyError
from streaming.text.convert import c4, enwiki_text, pile
from tests.domains.reference_reads import REPO, need_reference, reference_reads


def _read(path: str, split: str | None = None) -> list[dict]:
    dataset = StreamingDataset(local=path, split=split, batch_size=1)
    return [dataset[i] for i in range(dataset.num_samples)]


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def _pile_line(k: int, subset: str) -> dict:
    return {"text": f"document {k} \u00e9\n\tbody", "meta": {"pile_set_name": subset}}


@pytest.fixture
def pile_root(tmp_path) -> tuple[str, dict[str, list[dict]]]:
    """RAW/train/{00.jsonl,01.jsonl.zst}, val.jsonl, test.jsonl; split -> expected samples."""
    root = tmp_path / "pile"
    (root / "train").mkdir(parents=True)
    files = {"train/00.jsonl": [_pile_line(k, "Pile-CC") for k in range(3)],
             "train/01.jsonl.zst": [_pile_line(k, "ArXiv" if k % 2 else "Github")
                                    for k in range(3, 7)],
             "val.jsonl": [_pile_line(100, "Enron Emails")],
             "test.jsonl": [_pile_line(200, "PubMed"), _pile_line(201, "PubMed")]}
    for name, lines in files.items():
        text = "".join(json.dumps(line) + "\n" for line in lines).encode()
        (root / name).write_bytes(zstd.compress(text) if name.endswith(".zst") else text)
    flat = {split: [{"text": o["text"], "pile_set_name": o["meta"]["pile_set_name"]}
                    for name, lines in files.items() if name.startswith(split) for o in lines]
            for split in ("train", "val", "test")}
    return str(root), flat


needs_zstd = pytest.mark.skipif(
    shutil.which("zstd") is None and importlib.util.find_spec("zstandard") is None,
    reason="reading .jsonl.zst needs the zstandard package or the zstd command")


@needs_zstd
def test_pile_function_merges_train_into_one_flat_folder(pile_root, tmp_path) -> None:
    in_root, expected = pile_root
    out = str(tmp_path / "out")
    results = pile.convert_pile(in_root, out, compression="zstd:3", hashes=["sha1"],
                                size_limit=300, num_procs=1, progress_bar=False)
    assert [os.path.relpath(f, in_root) for f, _ in results] == [
        "train/00.jsonl", "train/01.jsonl.zst", "val.jsonl", "test.jsonl"]
    assert results[1][1] == {"Github": 2, "ArXiv": 2}
    for split in ("train", "val", "test"):
        assert _read(out, split) == expected[split]
    names = sorted(os.listdir(os.path.join(out, "train")))
    assert not [n for n in names if os.path.isdir(os.path.join(out, "train", n))]
    index = json.load(open(os.path.join(out, "train", "index.json")))
    basenames = [s["zip_data"]["basename"] for s in index["shards"]]
    assert len(basenames) > 2 and basenames == [f"shard.{i:05}.mds.zstd"
                                                for i in range(len(basenames))]
    raws = [s["raw_data"]["basename"] for s in index["shards"]]
    assert set(basenames) <= set(names) and set(names) <= {*basenames, *raws, "index.json"}


@needs_zstd
def test_pile_cli_prints_counts_per_file(pile_root, tmp_path) -> None:
    in_root, expected = pile_root
    out = str(tmp_path / "out")
    done = _run("streaming.text.convert.pile", "--in_root", in_root, "--out_root", out,
                "--compression", "", "--hashes", "")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["counts"] for line in lines] == [
        {"Pile-CC": 3}, {"ArXiv": 2, "Github": 2}, {"Enron Emails": 1}, {"PubMed": 2}]
    assert _read(out, "train") == expected["train"] and _read(out, "test") == expected["test"]


def test_pile_refuses_bad_lines_and_missing_files(tmp_path, monkeypatch) -> None:
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "0.jsonl").write_text('{"text": "a", "meta": {}, "extra": 1}\n')
    with pytest.raises(FileNotFoundError, match="val.jsonl"):
        pile.find_inputs(str(tmp_path))
    task = (str(tmp_path / "train" / "0.jsonl"), str(tmp_path / "o"), "", [], 1 << 20)
    with pytest.raises(ValueError, match="Invalid sample fields"):
        pile.file_to_dir(task)
    (tmp_path / "x.jsonl.zst").write_bytes(zstd.compress(b"{}\n"))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setattr(pile.shutil, "which", lambda name: None)
    with pytest.raises(MissingDependencyError, match="pip install zstandard"):
        with pile.open_jsonl(str(tmp_path / "x.jsonl.zst")):
            pass


@pytest.fixture
def enwiki_root(tmp_path) -> tuple[str, list[str], list[str]]:
    """The 500 parts (a few with text, blank and padded lines) and eval.txt."""
    root = tmp_path / "enwiki"
    root.mkdir()
    train = []
    for i in range(500):
        lines = [f"  article {i} line {j}\u2014wiki\t" for j in range(2)] if i % 97 == 0 else []
        (root / f"part-{i:05}-of-00500").write_text("\n".join(["", *lines, "   "]) + "\n")
        train += [line.strip() for line in lines]
    (root / "eval.txt").write_text("first eval\n\n second eval \n")
    return str(root), train, ["first eval", "second eval"]


def test_enwiki_text_cli_writes_train_and_val(enwiki_root, tmp_path) -> None:
    in_root, train, val = enwiki_root
    out = str(tmp_path / "out")
    done = _run("streaming.text.convert.enwiki_text", "--in_root", in_root, "--out_root", out,
                "--progress_bar", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert [s["text"] for s in _read(out, "train")] == train and len(train) == 12
    assert [s["text"] for s in _read(out, "val")] == val
    index = json.load(open(os.path.join(out, "train", "index.json")))
    assert index["shards"][0]["compression"] == "zstd:7"


def test_enwiki_process_split_names_a_missing_part(enwiki_root, tmp_path) -> None:
    in_root, _, val = enwiki_root
    out = str(tmp_path / "out")
    enwiki_text.process_split(in_root, out, "", ["xxh64"], 1 << 10, 0, 0, ["eval.txt"], "val")
    assert [s["text"] for s in _read(out, "val")] == val
    os.remove(os.path.join(in_root, "part-00042-of-00500"))
    with pytest.raises(FileNotFoundError, match="part-00042-of-00500"):
        enwiki_text.process_split(in_root, str(tmp_path / "o2"), "", [], 1 << 10, 0, 0,
                                  enwiki_text.TRAIN_BASENAMES, "train")
    assert not os.path.exists(tmp_path / "o2")


def test_c4_without_datasets_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(MissingDependencyError, match="pip install datasets"):
        c4.get("train")


def _c4_rows(n: int, tag: str) -> dict[str, list[str]]:
    return {"text": [f"{tag} text {i}" for i in range(n)],
            "timestamp": [f"2019-04-{i + 10:02}T12:00:00Z" for i in range(n)],
            "url": [f"https://example.com/{tag}/{i}" for i in range(n)]}


def test_c4_main_writes_what_the_hub_split_yields(monkeypatch, tmp_path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = {"train": _c4_rows(7, "tr"), "validation": _c4_rows(3, "va")}
    asked = []

    def fake_get(split: str):
        asked.append(split)
        return datasets.Dataset.from_dict(rows[split]).to_iterable_dataset(num_shards=1)

    monkeypatch.setattr(c4, "get", fake_get)
    out = str(tmp_path / "out")
    c4.main(c4.parse_args(["--out_root", out, "--batch_size", "2", "--progress_bar", "0"]))
    assert asked == ["train", "validation"]
    for hub_split, split in (("train", "train"), ("validation", "val")):
        got = _read(out, split)
        want = [dict(zip(rows[hub_split], values)) for values in zip(*rows[hub_split].values())]
        assert got == want


def test_c4_each_reads_shards_in_several_workers(tmp_path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = _c4_rows(10, "w")
    dataset = datasets.Dataset.from_dict(rows).to_iterable_dataset(num_shards=2)
    count = c4.write_split(c4.each(dataset, num_workers=8, batch_size=3), str(tmp_path / "o"),
                           compression=None, progress_bar=False)
    assert count == 10
    assert sorted(s["text"] for s in _read(str(tmp_path / "o"))) == sorted(rows["text"])


@needs_zstd
def test_the_reference_reads_our_text_outputs(pile_root, enwiki_root, tmp_path) -> None:
    need_reference()
    root = tmp_path / "ours"
    pile.convert_pile(pile_root[0], str(root / "pile"), compression="", size_limit=300,
                      num_procs=1, progress_bar=False)
    enwiki_text.process_split(enwiki_root[0], str(root / "enwiki"), "", ["sha1"], 1 << 9, 0, 0,
                              enwiki_text.TRAIN_BASENAMES, "train")
    seen = reference_reads(root, "pile:train", "enwiki:train")
    assert seen["pile"]["get"] == pile_root[1]["train"]
    assert seen["pile"]["local"] == pile_root[1]["train"]
    assert [s["text"] for s in seen["enwiki"]["get"]] == enwiki_root[1]
