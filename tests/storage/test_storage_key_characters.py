"""Object keys are the text after the bucket, whatever characters it holds.

`?` and `#` are characters of an S3, GCS or Azure key (boto3 and the consoles take them so),
not URL syntax: read as a query or a fragment, `.../train?v=1` and `.../train?v=2` were both the
prefix `train`, so the second dataset overwrote the first and reading the first gave the
second's samples. A `file://` URL, which is URL syntax, refuses them instead of cutting the path.
"""

from __future__ import annotations

from typing import Any

import pytest

from streaming import MDSWriter, StreamingDataset
from streaming.storage import open_store
from streaming.storage.local import local_path_of
from tests.storage.servers import Server


@pytest.fixture(params=["moto", "gcs", "azurite"])
def bucket(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Server:
    return request.getfixturevalue(f"{request.param}_server").apply_env(monkeypatch)


@pytest.mark.timeout(180)
def test_query_and_fragment_characters_are_part_of_the_key(bucket: Server, tmp_path: Any
                                                           ) -> None:
    root = bucket.fresh_url()
    names = {"train?v=1": 20, "train?v=2": 5, "val#a": 7, "val#b": 3, "pct%3Fx": 4}
    for name, count in names.items():
        with MDSWriter(out=f"{root}/{name}", columns={"id": "int"}) as writer:
            for i in range(count):
                writer.write({"id": 100 * count + i})
    for name in names:
        assert open_store(f"{root}/{name}").exists("index.json"), name
    assert not open_store(f"{root}/train").exists("index.json")
    for n, (name, count) in enumerate(names.items()):
        with StreamingDataset(remote=f"{root}/{name}", local=str(tmp_path / f"c{n}"),
                              batch_size=1) as ds:
            assert sorted(s["id"] for s in ds) == [100 * count + i for i in range(count)], name


@pytest.mark.parametrize("url", ["file:///data/train?v=1", "file:///data/val#a"])
def test_a_file_url_refuses_query_and_fragment(url: str) -> None:
    with pytest.raises(ValueError, match="cannot hold '\\?' or '#'.*%3F and %23"):
        local_path_of(url)
    assert local_path_of("file:///data/train%3Fv=1") == "/data/train?v=1"


@pytest.mark.parametrize("name", ["data//train", "data/./train", "data/../train", "x\x01y"])
def test_a_key_the_client_cannot_name_is_refused_naming_the_url(bucket: Server, name: str
                                                                ) -> None:
    """Such keys are legal in S3, but obstore cannot name them: it failed at the first request
    with the key alone (no scheme, no bucket) and a control character printed raw."""
    url = f"{bucket.fresh_url()}/{name}"
    if bucket.name == "fake-gcs":  # served by Google's own client, which names them literally
        with MDSWriter(out=url, columns={"id": "int"}) as writer:
            writer.write({"id": 7})
        assert open_store(url).exists("index.json")
        return
    with pytest.raises(ValueError) as info:
        MDSWriter(out=url, columns={"id": "int"})
    assert repr(url)[1:-1] in str(info.value)
    assert "\x01" not in str(info.value)
