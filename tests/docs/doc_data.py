"""The data the documentation examples read but do not write, and the environment they run
in (tests/docs/test_doc_examples.py): datasets on the test's S3 server and in its folder."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from streaming.storage import open_store, testing
from tests.docs.doc_tables import SCRUBBED

REPO = Path(__file__).resolve().parents[2]


def _write_mds(out: Path, columns: dict[str, str], samples: list[dict[str, Any]],
               **kwargs: Any) -> None:
    from streaming import MDSWriter

    with MDSWriter(out=str(out), columns=columns, **kwargs) as writer:
        for sample in samples:
            writer.write(sample)


def _tokens(n: int) -> list[dict[str, Any]]:
    import numpy as np

    rng = np.random.default_rng(0)
    return [{"tokens": rng.integers(0, 50_000, 16, dtype=np.uint16), "id": i} for i in range(n)]


def _texts(n: int, tag: str) -> list[dict[str, Any]]:
    return [{"text": f"{tag} sample {i}", "id": i} for i in range(n)]


def _parquet(folder: Path, files: int = 2, rows: int = 200) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        ids = list(range(f * rows, (f + 1) * rows))
        table = pa.table({"id": ids, "text": [f"row {i}" for i in ids],
                          "label": [i % 3 for i in ids]})
        pq.write_table(table, folder / f"part-{f}.parquet", row_group_size=50)


def seed_s3(s3: testing.S3Server, scratch: Path) -> dict[str, Any]:
    """Upload the remote datasets the docs read; return facts the substitutions need."""
    import xxhash

    store = open_store(s3.url(), **s3.options)

    def publish(folder: Path, prefix: str) -> None:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                store.upload(str(path), f"{prefix}/{path.relative_to(folder).as_posix()}")

    mds = {"my-dataset": ({"tokens": "ndarray:uint16:16", "id": "int"}, _tokens(512)),
           "data": ({"tokens": "ndarray:uint16:16", "id": "int"}, _tokens(512)),
           "web": ({"text": "str", "id": "int"}, _texts(300, "web")),
           "code": ({"text": "str", "id": "int"}, _texts(100, "code"))}
    for name, (columns, samples) in mds.items():
        _write_mds(scratch / name, columns, samples, compression="zstd", size_limit=4096)
        publish(scratch / name, name)
    if importlib.util.find_spec("pyarrow"):
        for name in ("corpus", "raw"):
            _parquet(scratch / name)
            publish(scratch / name, name)
    shard = os.urandom(50_000)
    (scratch / "shard").write_bytes(shard)
    store.upload(str(scratch / "shard"), "dataset/train/shard.00003.mds.zstd")
    return {"shard_hash": xxhash.xxh3_64(shard).hexdigest(), "shard_size": len(shard)}


def seed_local(root: Path, work: Path) -> None:
    """Local inputs: `/data/plain-dataset` (under `root`) and the converters' sources (in `work`)."""
    _write_mds(root / "data" / "plain-dataset", {"text": "str", "id": "int"}, _texts(100, "plain"))
    _write_mds(root / "vault" / "bucket" / "train", {"text": "str", "id": "int"},
               _texts(50, "vault"))
    if importlib.util.find_spec("pyarrow"):
        _parquet(work / "data")
        _parquet(work / "raw")
    (work / "table.tsv").write_text("id\ttext\n" + "".join(f"{i}\trow {i}\n" for i in range(20)))
    (work / "lines").mkdir()
    for n in range(3):
        (work / "lines" / f"{n}.txt").write_text("".join(f"line {n}.{i}\n" for i in range(10)))
    if importlib.util.find_spec("PIL"):
        from PIL import Image

        for label, color in (("cat", "red"), ("dog", "blue")):
            (work / "train" / label).mkdir(parents=True)
            for i in range(3):
                Image.new("RGB", (8, 8), color).save(work / "train" / label / f"{i}.jpg")


def doc_env(s3: testing.S3Server, root: Path, ray_tmp: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(s3.env())  # S3_ENDPOINT_URL and the AWS test credentials
    tmp = root / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    env.update({
        "HOME": str(root / "home"),  # nothing lands in the real home (~/.ray, ~/.cache)
        "RAY_TMPDIR": ray_tmp,  # short: Ray's socket paths must fit in 107 bytes
        "AWS_ENDPOINT_URL": s3.endpoint,  # pyarrow's own S3 filesystem (Ray's read_parquet)
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,  # never this machine's profiles
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9",
        "NO_GCE_CHECK": "True",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "TMPDIR": str(tmp),  # default caches (a Stream without `local=`) stay in the test folder
        "MPLBACKEND": "Agg",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(root / "hf-home"),
        "RAY_USAGE_STATS_ENABLED": "0",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "DOC_VAULT_ROOT": str(root / "vault"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    })
    return env
