"""bench_dataset's rows, goals and printed tables: issue #12's targets against the best peer
of the same run, with the physical floor measured beside the rows that have one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

IMPLS = ("ours", "reference", "litdata")
PEERS = ("reference", "litdata")
BATCH, WORKERS = 256, 2
IMAGES_BATCH = 32
MEMORY_BATCHES = 50


@dataclass(frozen=True)
class Target:
    """Issue #12's goal for one row: ours against the best peer of the same run must reach
    `ratio` (at least for throughput, `higher`; at most for time and memory), and `absolute`
    (in the row's unit) when the issue also sets one."""

    key: str
    label: str
    unit: str  # "smp/s", "MB/s", "ms" or "MB"
    ratio: float
    absolute: float | None = None

    @property
    def higher(self) -> bool:
        return self.unit.endswith("/s")


TARGETS = (
    Target("loader", f"tokens, loader {WORKERS} workers, batch {BATCH}", "smp/s", 1.5),
    Target("shuffled", "same, shuffle=True", "smp/s", 1.5),
    Target("s3", "cold epoch from local S3, one process", "smp/s", 1.5),
    Target("images", "100 KB images, every byte read", "MB/s", 1.5),
    Target("images_views", "same, ours with bytes_as_views=True", "MB/s", 1.5),
    # Not one of the rows: the images through each library's loader, as users train.
    Target("images_loader", f"same, loader {WORKERS} workers, batch {IMAGES_BATCH}", "MB/s",
           1.5),
    # Nor this one: 2 KB texts (a `str` column) through the loader.
    Target("text_loader", f"2 KB texts, loader {WORKERS} workers, batch {BATCH}", "smp/s", 1.5),
    Target("direct", "tokens, one process (iterate dataset)", "smp/s", 1.5),
    Target("tiny_construct", "tiny shards: construct to first sample", "ms", 0.67),
    Target("tiny", "tiny shards: construct + full read", "smp/s", 1.5),
    Target("first", "fresh process to first batch", "ms", 0.67, 1000.0),
    Target("resume", "resume: load_state_dict -> next batch", "ms", 0.67),
    Target("rss", "peak RSS, one-process tokens epoch", "MB", 0.67, 300.0),
)


def metric(key: str, res: dict[str, Any] | None) -> float | None:
    """A row's number in its unit: samples/s, MB/s, milliseconds or megabytes."""
    if not res:
        return None
    if key in ("loader", "shuffled", "direct", "tiny", "text_loader"):
        return res["n"] / res["wall"]
    if key == "s3":
        return res["samples"] / res["wall"]
    if key.startswith("images"):
        return res["bytes"] / res["wall"] / 1e6
    if key == "rss":
        return res["maxrss"]
    seconds = {"tiny_construct": "first", "first": "total", "resume": "resume"}[key]
    return res[seconds] * 1e3


def floors(results: dict[str, dict[str, Any]], tiny_parse: float | None,
           loader: dict[str, Any] | None) -> dict[str, float]:
    """The physical floor of each row that has one, in the row's unit (see the README)."""
    out: dict[str, float] = {}
    images = results["images"].get("ours")
    if images and "floor" in images:
        out["images"] = out["images_views"] = images["bytes"] / images["floor"] / 1e6
    s3 = results.get("s3", {}).get("ours")
    if s3 and "reader_floor" in s3:
        out["s3"] = s3["samples"] / s3["reader_floor"]
    if tiny_parse is not None:
        out["tiny_construct"] = tiny_parse * 1e3
    if loader:
        out["first"], out["resume"] = loader["total"] * 1e3, loader["start"] * 1e3
        out["rss"] = loader["rss"]
    return out


def _fmt(unit: str, value: float | None) -> str:
    if value is None:
        return "-"
    if unit == "smp/s":
        return f"{value / 1e3:,.1f}k smp/s"
    return f"{value:,.0f} {unit}"


def verdict(t: Target, ours: float | None, peer: float | None,
            floor: float | None) -> tuple[str, str]:
    """(ratio text, PASS / MISS / FLOOR): FLOOR when even the floor misses the goal against
    this peer, so no reader could reach it on this machine."""
    if not ours or not peer:
        return "-", "-"
    ratio = ours / peer
    met = ratio >= t.ratio if t.higher else ratio <= t.ratio
    if t.absolute is not None:
        met = met and (ours >= t.absolute if t.higher else ours <= t.absolute)
    result = "PASS" if met else "MISS"
    if not met and floor:
        reach = floor / peer
        if (reach < t.ratio) if t.higher else (reach > t.ratio):
            result = f"FLOOR ({reach:.2f}x)"
    return f"{ratio:.2f}x", result


def print_table(results: dict[str, dict[str, Any]], floor: dict[str, float],
                errors: dict[str, str]) -> None:
    head = (f"{'row':<40}{'ours':>15}{'reference':>15}{'litdata':>15}{'floor':>15}  "
            f"{'vs best peer':<13}{'goal':<17}result")
    print(head)
    print("-" * len(head))
    for t in TARGETS:
        vals = {impl: metric(t.key, results[t.key].get(impl)) for impl in IMPLS}
        peers = [(vals[p], p) for p in PEERS if vals[p]]
        best = (max(peers) if t.higher else min(peers)) if peers else None
        ratio, result = verdict(t, vals["ours"], best[0] if best else None, floor.get(t.key))
        ratio += f" {best[1][:3]}" if best else ""
        goal = f"{'>=' if t.higher else '<='}{t.ratio}x"
        if t.absolute is not None:
            goal += f", {'>=' if t.higher else '<='}{t.absolute:,.0f}"
        print(f"{t.label:<40}" + "".join(f"{_fmt(t.unit, vals[i]):>15}" for i in IMPLS)
              + f"{_fmt(t.unit, floor.get(t.key)):>15}  {ratio:<13}{goal:<17}{result}")
    _print_details(results)
    for what, why in errors.items():
        print(f"{what}: skipped: {why}")


def _print_details(results: dict[str, dict[str, Any]]) -> None:
    print("\ndetails (ours / reference / litdata):")
    for key in ("loader", "shuffled", "direct", "tiny"):
        cells = []
        for impl in IMPLS:
            r = results[key].get(impl)
            cells.append("-" if not r else f"{1e6 * r['cpu'] / r['n']:.1f}")
        print(f"  {key:<8} CPU us/sample (process + workers): {' / '.join(cells)}")
    s3 = results.get("s3", {}).get("ours") or {}
    if "floor" in s3:
        print(f"  s3       link floor (objects fetched over 8 connections, nothing written, "
              f"parsed or touched): {s3['samples'] / s3['floor']:,.0f} smp/s; the row's floor "
              "is the library-free reader (README)")
    cold = [results["images"].get(i) for i in IMPLS]
    print("  images   cold first pass (copy into the cache + read), MB/s: " + " / ".join(
        "-" if not r else f"{r['bytes'] / r['cold'] / 1e6:,.0f}" for r in cold))
    for impl in IMPLS:
        f = results["first"].get(impl)
        if f:
            print(f"  first    {impl:<9} import {f['import'] * 1e3:6.0f} ms, construct "
                  f"{f['construct'] * 1e3:5.0f} ms, construct->first batch "
                  f"{f['first_batch'] * 1e3:5.0f} ms")
    ids = {impl: r["first_id"] for impl, r in results["resume"].items() if r}
    print(f"  resume   first sample id after resume: {ids}")


def print_memory(mem: dict[tuple[str, int], Any]) -> None:
    print(f"\nmemory (MB, /proc/<pid>/smaps): {WORKERS}-worker loader over N int samples (local, "
          f"no shuffle, batch {BATCH}) after {MEMORY_BATCHES} batches. 'shm' = the part in "
          "/dev/shm blocks (ours: the node's one plan, each worker mapping only its slice); "
          "'own' = USS - shm USS, the worker's private heap")
    print(f"  {'impl':<10}{'N':>11}  {'process':<9}{'Rss':>8}{'Pss':>8}{'USS':>8}{'shm Pss':>9}"
          f"{'own':>8}")
    for (impl, n), res in mem.items():
        if not res:
            continue
        rows = [("main", res["main"])] + [(f"worker{i}", w) for i, w in enumerate(res["workers"])]
        for name, m in rows:
            print(f"  {impl:<10}{n:>11,}  {name:<9}{m['rss']:8.1f}{m['pss']:8.1f}{m['uss']:8.1f}"
                  f"{m['shm_pss']:9.1f}{m['uss'] - m['shm_uss']:8.1f}")
