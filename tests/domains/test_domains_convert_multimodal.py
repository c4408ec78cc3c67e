"""The multimodal conversion scripts: WebVid crawled from a 127.0.0.1 web server this test runs,
its videos moved out of the shards, keyword subsets, and LAION-400M parquet shards converted and
"uploaded" to a local directory. Outputs are read back exactly."""

from __future__ import annotations

import csv
import functools
import json
import math
import os
import socket
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from streaming import StreamingDataset
from streaming.multimodal import StreamingInsideWebVid, StreamingOutsideGIWebVid
from streaming.multimodal.convert.laion.laion400m import convert_and_upload as laion
from streaming.multimodal.convert.webvid import (
    crawl_webvid,
    crawl_webvid_subsets,
    extract_webvid_videos,
)
from tests.domains.reference_reads import REPO, need_reference, portable, reference_reads

HEADER = ["videoid", "contentUrl", "duration", "page_dir", "name", "page_idx"]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def video_server(tmp_path):
    """A web server on 127.0.0.1 serving tmp_path/www; yields its base URL."""
    www = tmp_path / "www"
    www.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", www
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the with ends: nothing listens


@pytest.fixture
def webvid_csv(video_server, tmp_path) -> tuple[str, dict[str, dict]]:
    """A WebVid-style CSV of 4 served videos, one 404 and one unreachable; videoid -> sample."""
    base, www = video_server
    rows, expected = [], {}
    names = ["A cat on a plane", "dog walks", "a train and a cat", "sunset", "cat 404", "dog x"]
    for i, name in enumerate(names):
        url = f"{base}/v/{i}.mp4"
        if i < 4:
            (www / "v").mkdir(exist_ok=True)
            (www / "v" / f"{i}.mp4").write_bytes(bytes([i]) * (100 + i) + b"\x00mp4")
        elif i == 5:
            url = f"http://127.0.0.1:{_closed_port()}/v/5.mp4"
        row = {"videoid": str(1000 + i), "contentUrl": url, "duration": f"PT00H0{i}M1{i}S",
               "page_dir": f"dir{i % 2}", "name": name, "page_idx": str(i)}
        rows.append(row)
        if i < 4:
            expected[row["videoid"]] = {**row, "duration": i * 60 + 10 + i,
                                        "content": (www / "v" / f"{i}.mp4").read_bytes()}
    path = tmp_path / "results.csv"
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, HEADER)
        writer.writeheader()
        writer.writerows(rows)
    return str(path), expected


def test_parse_duration_and_head() -> None:
    assert crawl_webvid.parse_duration("PT01H02M03S") == 3723
    with pytest.raises(ValueError, match="PT00H00M00S"):
        crawl_webvid.parse_duration("15s")
    assert list(crawl_webvid.head(iter(range(5)), 2)) == [0, 1]
    assert list(crawl_webvid.head(iter(range(3)), -1)) == [0, 1, 2]


def test_crawl_cli_downloads_from_the_local_server(webvid_csv, tmp_path) -> None:
    csv_path, expected = webvid_csv
    out = str(tmp_path / "inside")
    module = "streaming.multimodal.convert.webvid.crawl_webvid"
    done = subprocess.run([sys.executable, "-m", module, "--in", csv_path, "--out_root", out,
                           "--num_procs", "2"], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with StreamingInsideWebVid(local=out, batch_size=1) as ds:
        got = {s["videoid"]: s for s in (ds[i] for i in range(ds.num_samples))}
    assert got == expected  # the 404 and the unreachable row are skipped


def test_crawl_limit_and_missing_columns(webvid_csv, tmp_path) -> None:
    csv_path, expected = webvid_csv
    args = crawl_webvid.parse_args(["--in", csv_path, "--out_root", str(tmp_path / "two"),
                                    "--num_procs", "1", "--limit", "2"])
    assert crawl_webvid.main(args) == 2
    assert [s["videoid"] for s in StreamingDataset(local=str(tmp_path / "two"), batch_size=1)
            ] == ["1000", "1001"]
    bad = tmp_path / "bad.csv"
    bad.write_text("videoid,contentUrl,duration\n1,http://127.0.0.1:1/x,PT00H00M01S\n")
    args = crawl_webvid.parse_args(["--in", str(bad), "--out_root", str(tmp_path / "b")])
    with pytest.raises(ValueError, match=r"no column\(s\) \['name', 'page_idx', 'page_dir'\]"):
        crawl_webvid.main(args)


def test_a_crawl_that_cannot_download_at_all_stops(webvid_csv, tmp_path, monkeypatch) -> None:
    """Without the storage layer's HTTP client every row failed as if its video were gone,
    and the crawl wrote an empty dataset with exit code 0."""
    from streaming.errors import MissingDependencyError

    def missing(url: str):
        raise MissingDependencyError("http:// URLs need the package 'obstore'")

    monkeypatch.setattr(crawl_webvid, "open_store", missing)
    csv_path, _ = webvid_csv
    args = crawl_webvid.parse_args(["--in", csv_path, "--out_root", str(tmp_path / "none"),
                                    "--num_procs", "1"])
    with pytest.raises(MissingDependencyError, match="obstore"):
        crawl_webvid.main(args)


def test_extract_moves_videos_out_and_the_outside_dataset_reads_them(webvid_csv,
                                                                     tmp_path) -> None:
    csv_path, expected = webvid_csv
    inside = str(tmp_path / "inside")
    crawl_webvid.main(crawl_webvid.parse_args(["--in", csv_path, "--out_root", inside,
                                               "--num_procs", "1"]))
    out_mds, out_mp4 = str(tmp_path / "outside"), str(tmp_path / "mp4")
    args = extract_webvid_videos.parse_args(["--in", inside, "--out_mds", out_mds, "--out_mp4",
                                             out_mp4])
    assert (args.compression, args.hashes, args.size_limit) == ("zstd:16", "sha1,xxh3_64",
                                                                1 << 25)
    assert extract_webvid_videos.main(args) == 4
    rows = list(StreamingDataset(local=out_mds, batch_size=1))
    assert [r["content_path"] for r in rows] == [f"000/00{i}.mp4" for i in range(4)]
    for row in rows:
        want = expected[row["videoid"]]
        with open(os.path.join(out_mp4, row["content_path"]), "rb") as video:
            assert video.read() == want["content"]
        assert {k: v for k, v in row.items() if k != "content_path"} == {
            k: v for k, v in want.items() if k != "content"}
    with StreamingOutsideGIWebVid(local=out_mds, extra_local=str(tmp_path / "extra"),
                                  extra_remote=out_mp4) as ds:
        assert ds[2]["content"] == expected[ds[2]["videoid"]]["content"]


def test_subsets_split_by_keyword_and_show_mixes_them(webvid_csv, tmp_path, capsys) -> None:
    csv_path, expected = webvid_csv
    root = str(tmp_path / "subsets")
    args = crawl_webvid_subsets.parse_args(["--csv", csv_path, "--mds_root", root,
                                            "--filters", "cat,dog,zebra", "--num_procs", "2"])
    assert args.limit == -1
    counts = crawl_webvid_subsets.main(args)
    assert counts == {"cat": 2, "dog": 1, "zebra": 0}  # the 404 / unreachable rows are lost
    assert sorted(os.listdir(root)) == ["cat", "dog"]
    cats = sorted(s["videoid"] for s in StreamingDataset(local=os.path.join(root, "cat"),
                                                         batch_size=1))
    assert cats == ["1000", "1002"]
    dog = StreamingDataset(local=os.path.join(root, "dog"), batch_size=1)[0]
    assert dog["content"] == expected["1001"]["content"] and "page_idx" not in dog
    shown = capsys.readouterr().out
    assert 'Subset "cat": 2 samples' in shown and 'Subset "dog": 1 samples' in shown
    assert 'Subset "zebra": no samples downloaded' in shown and "Epoch 2:" in shown


def _write_laion_shard(local: str, idx: int, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = ["NSFW", "similarity", "LICENSE", "caption", "url", "key", "status",
             "error_message", "width", "height", "original_width", "original_height", "exif",
             "jpg"]
    table = pa.table({name: [row.get(name) for row in rows] for name in names})
    pq.write_table(table, os.path.join(local, f"{idx:05}.parquet"))
    with open(os.path.join(local, f"{idx:05}_stats.json"), "w") as file:
        json.dump({"count": len(rows)}, file)


def _laion_row(k: int) -> dict:
    return {"NSFW": "UNLIKELY", "similarity": 0.25 + k, "LICENSE": "?", "caption": f"cap {k}",
            "url": f"https://x/{k}.jpg", "key": f"{k:09}", "status": "success",
            "error_message": None, "width": 4, "height": 3, "original_width": 40 + k,
            "original_height": None, "exif": "{}", "jpg": bytes([k]) * 9}


@pytest.fixture
def laion_local(tmp_path) -> str:
    pytest.importorskip("pyarrow")
    local = tmp_path / "laion"
    local.mkdir()
    _write_laion_shard(str(local), 0, [_laion_row(0), _laion_row(1)])
    _write_laion_shard(str(local), 1, [_laion_row(2), {**_laion_row(3), "similarity": None,
                                                       "caption": None, "jpg": None}])
    (local / "done").touch()
    return str(local)


def test_laion_converts_uploads_and_indexes_every_shard(laion_local, tmp_path, capsys) -> None:
    remote = str(tmp_path / "remote")
    args = laion.parse_args(["--local", laion_local, "--remote", remote, "--keep_parquet", "0",
                             "--poll_interval", "0"])
    laion.main(args)
    assert sorted(os.listdir(remote)) == ["index.json", "shard.00000.mds", "shard.00001.mds"]
    index = json.load(open(os.path.join(remote, "index.json")))
    assert [s["raw_data"]["basename"] for s in index["shards"]] == ["shard.00000.mds",
                                                                    "shard.00001.mds"]
    assert not any(n.endswith(".parquet") for n in os.listdir(laion_local))
    rows = [StreamingDataset(local=remote, batch_size=1)[i] for i in range(4)]
    assert [r["caption"] for r in rows] == ["cap 0", "cap 1", "cap 2", ""]
    assert rows[1]["jpg"] == bytes([1]) * 9 and rows[3]["jpg"] == b""
    assert rows[0]["error_message"] == "" and rows[0]["original_height"] == 0
    assert rows[2]["original_width"] == 42 and rows[1]["similarity"] == 1.25
    assert math.isnan(rows[3]["similarity"])
    capsys.readouterr()
    laion.main(args)  # a rerun finds every shard marked done and only republishes the index
    assert capsys.readouterr().out.count(": done") == 2


def test_laion_a_gap_in_the_stats_files_is_an_error(laion_local) -> None:
    os.rename(os.path.join(laion_local, "00001_stats.json"),
              os.path.join(laion_local, "00005_stats.json"))
    with pytest.raises(RuntimeError, match="00001_stats.json"):
        list(laion.each_downloaded_shard(laion_local))


def test_the_reference_reads_our_multimodal_outputs(webvid_csv, laion_local, tmp_path) -> None:
    need_reference()
    root = tmp_path / "ours"
    crawl_webvid.main(crawl_webvid.parse_args(["--in", webvid_csv[0], "--out_root",
                                               str(root / "webvid"), "--num_procs", "1"]))
    laion.main(laion.parse_args(["--local", laion_local, "--remote", str(root / "laion"),
                                 "--poll_interval", "0"]))
    seen, forms = reference_reads(root, "webvid", "laion"), portable()
    for name in ("webvid", "laion"):
        ours = StreamingDataset(local=str(root / name), batch_size=1)
        want = [{k: forms.to_portable(v) for k, v in ours[i].items()}
                for i in range(ours.num_samples)]
        assert len(want) == 4  # compared as JSON text: a NaN similarity equals itself there
        assert json.dumps(seen[name]["get"], sort_keys=True) == json.dumps(want, sort_keys=True)
