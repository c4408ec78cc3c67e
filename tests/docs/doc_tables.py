"""What the documentation examples need to run here (tests/docs/test_doc_examples.py): which
blocks are skipped or expected to fail, the packages they need, the definitions the docs leave
to the reader (preludes), the arguments they elide (substitutions), the modules they name, and
the environment variables a run must not inherit."""

from __future__ import annotations

Key = tuple[str, int]  # (markdown file relative to the repository, block number from 1)

# Absolute placeholder folders that move under the test's folder (`"/data/x"` -> `"<root>/data/x"`).
ROOTS = ("data", "tmp", "mnt", "local_disk0", "cache")

SKIP: dict[Key, str] = {
    ("docs/parquet.md", 3): "reads hf://datasets/ORG/NAME from the Hugging Face Hub: needs the "
                            "network and a real dataset (no local Hub server here)",
}

# (why, the text its error must contain: a block failing otherwise is a plain failure).
XFAIL: dict[Key, tuple[str, str]] = {}

# Importable modules, or "java" / "weed" for binaries.
NEEDS: dict[Key, tuple[str, ...]] = {
    ("README.md", 5): ("pyarrow",),
    ("docs/convert.md", 1): ("pyarrow", "datasets", "pandas", "PIL"),
    ("docs/frameworks.md", 1): ("lightning",),
    ("docs/frameworks.md", 2): ("accelerate",),
    ("docs/convert.md", 2): ("pyspark", "pandas", "pyarrow", "java"),
    ("docs/convert.md", 3): ("ray", "pyarrow"),
    ("docs/convert.md", 4): ("dask", "pyarrow", "pandas"),
    ("docs/parquet.md", 1): ("pyarrow",),
    ("docs/parquet.md", 2): ("pyarrow",),
    ("docs/simulate.md", 1): ("matplotlib",),
    ("docs/storage.md", 4): ("weed",),
}

PRELUDES: dict[Key, str] = {
    ("docs/convert.md", 1): """
        import datasets
        import pandas

        def load_dataset(name):  # the doc's `load_dataset("...")`: a small Hugging Face dataset
            rows = {"text": ["a", "b", "c"], "label": [0, 1, 0]}
            return datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows)})

        pandas_frame_or_arrow_table = pandas.DataFrame({"id": [1, 2, 3], "text": ["x", "y", "z"]})
    """,
    ("docs/convert.md", 2): """
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[1]").appName("doc-examples")
                 .config("spark.ui.enabled", "false").getOrCreate())
        df = spark.createDataFrame([(i, f"row {i}") for i in range(100)], "id long, text string")
    """,
    ("docs/convert.md", 5): """
        import glob

        paths = glob.glob("lines/*.txt")
    """,
    ("docs/convert.md", 6): """
        columns = {"text": "str"}
        rank, world_size = 0, 1

        def my_slice(rank, world_size):
            return ({"text": f"sample {i}"} for i in range(rank, 100, world_size))
    """,
    # "Only the columns you use" is the recipe's dataset written another way, not a second
    # dataset over the same cache (which one process refuses: ReusedLocalError).
    ("docs/parquet.md", 2): """
        del dataset
    """,
    ("docs/storage.md", 3): """
        from streaming import MDSWriter

        with MDSWriter(out="/data/train", columns={"id": "int"}, exist_ok=True) as writer:
            for i in range(10):
                writer.write({"id": i})
    """,
    ("docs/storage.md", 4): """
        import os

        from streaming import MDSWriter
    """,
}

SUBSTITUTIONS: dict[Key, list[tuple[str, str]]] = {
    # convert.md's examples all write `s3://bucket/ds`; give each its own dataset.
    ("docs/convert.md", 2): [('"s3://bucket/ds"', '"s3://bucket/spark-ds"')],
    ("docs/convert.md", 5): [('"s3://bucket/ds"', '"s3://bucket/parallel-ds"')],
    ("docs/convert.md", 6): [('"s3://bucket/ds/', '"s3://bucket/recipe-ds/')],
    ("docs/convert.md", 7): [('"s3://bucket/ds"', '"s3://bucket/recipe-ds"')],
    # The digest and size of the shard seed_s3 uploads (only the real file can have them).
    ("docs/storage.md", 1): [('"9555e8555c62dcfd"', '"$shard_hash"'),
                             ("expected_size=123456", "expected_size=$shard_size")],
    # The store's methods are left to the reader (`...`): serve a folder.
    ("docs/storage.md", 2): [
        ("def get(self, path): ...", "def get(self, path): return _file(self, path).read_bytes()"),
        ("def get_range(self, path, start, end): ...",
         "def get_range(self, path, start, end): return _file(self, path).read_bytes()[start:end]"),
        ("def size(self, path): ...", "def size(self, path): return _file(self, path).stat().st_size"),
        ("def upload(self, local_path, path): ...",
         "def upload(self, local_path, path): _upload(self, local_path, path)"),
        ('def list(self, prefix=""): ...', 'def list(self, prefix=""): return _list(self, prefix)'),
    ],
    ("docs/storage.md", 4): [('MDSWriter(out=s3.url("tokens"), ...)',
                              'MDSWriter(out=s3.url("tokens"), columns={"id": "int"})')],
}

# The lines of a block before a marker line are a module of their own (the doc says so).
MODULES: dict[Key, tuple[str, str, str]] = {
    ("docs/storage.md", 2): ("mystore.py", "# at start-up", """
        import os
        import pathlib
        import shutil

        def _file(store, path):  # vault://bucket/train -> $DOC_VAULT_ROOT/bucket/train
            found = pathlib.Path(os.environ["DOC_VAULT_ROOT"], store.url.split("://", 1)[1], path)
            if not found.is_file():
                raise store.not_found(path)
            return found

        def _upload(store, local_path, path):
            target = pathlib.Path(os.environ["DOC_VAULT_ROOT"], store.url.split("://", 1)[1], path)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(local_path, target)

        def _list(store, prefix):
            root = pathlib.Path(os.environ["DOC_VAULT_ROOT"], store.url.split("://", 1)[1])
            names = (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
            return sorted(n for n in names if n.startswith(prefix))
    """),
}

SCRUBBED = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
            "S3_ENDPOINT_URL", "S3_CANNED_ACL", "GCS_KEY", "GCS_SECRET", "STORAGE_EMULATOR_HOST",
            "AZURE_ACCOUNT_NAME", "AZURE_ACCOUNT_ACCESS_KEY", "AZURE_STORAGE_ENDPOINT",
            "GOOGLE_APPLICATION_CREDENTIALS", "MOSAICML_STREAMING_AWS_REQUESTER_PAYS",
            "COMPOSER_SFTP_KEY_FILE", "COMPOSER_SFTP_KNOWN_HOSTS_FILE", "SSL_CERT_FILE",
            "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
            "HF_TOKEN", "STREAMING_BATCHED", "STREAMING_METRICS_PATH", "PYSPARK_PYTHON")
