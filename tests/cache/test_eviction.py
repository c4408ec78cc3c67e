"""The eviction policy: enough room, never a protected shard, best victims first."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from streaming.cache.eviction import NEVER, CacheFullError, choose_evictions


def _call(**kw):
    n = len(kw["size_bytes"])
    kw.setdefault("resident", np.ones(n, bool))
    kw.setdefault("evictable", np.ones(n, bool))
    kw.setdefault("last_access", np.arange(n))
    return choose_evictions(**kw)


def test_nothing_to_do_when_it_fits() -> None:
    out = _call(size_bytes=np.array([10, 10]), usage_bytes=20, limit_bytes=100, needed_bytes=80)
    assert out.tolist() == []


def test_lru_without_future_knowledge() -> None:
    out = _call(size_bytes=np.array([10, 10, 10]), last_access=np.array([5, 1, 3]),
                usage_bytes=30, limit_bytes=30, needed_bytes=15)
    assert out.tolist() == [1, 2]


def test_prefers_shards_needed_last() -> None:
    out = _call(size_bytes=np.array([10, 10, 10]), last_access=np.array([1, 2, 3]),
                next_use=np.array([0, NEVER, 50]), usage_bytes=30, limit_bytes=30,
                needed_bytes=10)
    assert out.tolist() == [1]


def test_protected_and_absent_shards_are_never_chosen() -> None:
    out = _call(size_bytes=np.array([10, 10, 10]), resident=np.array([True, False, True]),
                evictable=np.array([False, True, True]), usage_bytes=20, limit_bytes=20,
                needed_bytes=5)
    assert out.tolist() == [2]


def test_impossible_raises_with_numbers() -> None:
    with pytest.raises(CacheFullError, match="no shards present locally to evict"):
        _call(size_bytes=np.array([10]), evictable=np.array([False]), usage_bytes=10,
              limit_bytes=10, needed_bytes=1)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_property_frees_enough_minimally(data) -> None:
    n = data.draw(st.integers(1, 30))
    sizes = np.array(data.draw(st.lists(st.integers(1, 100), min_size=n, max_size=n)))
    resident = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    evictable = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    access = np.array(data.draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)))
    usage = int(sizes[resident].sum())
    limit = data.draw(st.integers(0, max(usage, 1)))
    needed = data.draw(st.integers(0, 50))
    free_able = int(sizes[resident & evictable].sum())
    try:
        out = choose_evictions(size_bytes=sizes, resident=resident, evictable=evictable,
                               last_access=access, usage_bytes=usage, limit_bytes=limit,
                               needed_bytes=needed)
    except CacheFullError:
        assert usage + needed - limit > free_able
        return
    assert len(set(out.tolist())) == len(out)
    assert all(resident[out]) and all(evictable[out])
    assert usage - sizes[out].sum() + needed <= limit
    if len(out):  # minimal: dropping the last victim would not have been enough
        assert usage - sizes[out[:-1]].sum() + needed > limit


@st.composite
def _caches(draw: st.DrawFn) -> dict:
    n = draw(st.integers(1, 300))
    ints = st.integers(0, 4)  # few distinct values: many ties, as NEVER / never-accessed make
    return {
        "size_bytes": np.array(draw(st.lists(st.integers(1, 50), min_size=n, max_size=n))),
        "resident": np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))),
        "evictable": np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))),
        "last_access": np.array(draw(st.lists(ints, min_size=n, max_size=n)), np.uint64),
        "next_use": draw(st.none() | st.just(np.array(
            draw(st.lists(st.sampled_from([0, 1, 2, int(NEVER)]), min_size=n, max_size=n)),
            np.int64))),
        "needed_bytes": draw(st.integers(1, 400)),
    }


@given(_caches())
@settings(max_examples=300, deadline=None)
def test_partial_selection_picks_what_the_full_ranking_picks(cache: dict) -> None:
    """`choose_evictions` ranks only the best few candidates (linear time under the node's
    lock); it must take exactly the prefix of the full ranking, ties included."""
    from streaming.cache.eviction import rank_evictions

    usage = int(cache["size_bytes"][cache["resident"]].sum())
    limit = max(usage, 1)
    ranked = rank_evictions(resident=cache["resident"], evictable=cache["evictable"],
                            last_access=cache["last_access"], next_use=cache["next_use"])
    freed = np.cumsum(cache["size_bytes"][ranked])
    excess = usage + cache["needed_bytes"] - limit
    try:
        out = choose_evictions(usage_bytes=usage, limit_bytes=limit, **cache)
    except CacheFullError:
        assert not len(freed) or freed[-1] < excess
        return
    count = int(np.searchsorted(freed, excess, side="left")) + 1
    assert out.tolist() == ranked[:count].tolist()
