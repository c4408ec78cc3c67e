"""The planner's building blocks against straightforward (slow) formulations."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from streaming.order.shuffle.py1e import _locator
from streaming.order.shuffle.py1s import divide_spans
from streaming.order.shuffle.sorting import sort_by_positions


def _divide_spans_loop(spans: list[tuple[int, int]], num_samples: int,
                       num_parts: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Spec §6.3 `divide_spans`, one span at a time."""
    spans = list(spans)
    out, supers, index, so_far = [], [], 0, 0
    for part in range(num_parts):
        part_end = num_samples * (part + 1) // num_parts
        begin = len(out)
        while index < len(spans):
            start, stop = spans[index]
            if part_end < so_far + stop - start:
                if so_far < part_end:
                    split = part_end - so_far
                    out.append((start, start + split))
                    spans[index] = (start + split, stop)
                    so_far += split
                break
            out.append((start, stop))
            index += 1
            so_far += stop - start
        supers.append((begin, len(out)))
    return out, supers


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(0, 30), max_size=20), parts=st.integers(1, 12),
       extra=st.integers(-5, 5), data=st.data())
def test_divide_spans_matches_the_loop(sizes: list[int], parts: int, extra: int,
                                       data: st.DataObject) -> None:
    begins = np.cumsum([0] + sizes)[:-1].tolist()
    spans = data.draw(st.permutations(list(zip(begins, (np.array(begins) + sizes).tolist()))))
    total = max(sum(sizes) + extra, 0)
    assert divide_spans(list(spans), total, parts) == _divide_spans_loop(spans, total, parts)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1 << 15, 1 << 16),
       spread=st.sampled_from([1e-9, 1e-3, 1.0]), value_bits=st.sampled_from([20, 34, 40]))
def test_sort_by_positions_equals_argsort(seed: int, size: int, spread: float,
                                          value_bits: int) -> None:
    rng = np.random.default_rng(seed)
    # Clustered positions share truncated keys, so the collision pass always runs; 20-bit ids
    # ride in the key (34 with only 13 fraction bits), 40-bit ids force the index path.
    positions = np.unique(rng.integers(0, size // 8, size) + rng.random(size) * spread)
    rng.shuffle(positions)
    values = rng.choice(1 << value_bits, len(positions), replace=False).astype(np.int64)
    where = {value: i for i, value in enumerate(values.tolist())}
    out = np.empty_like(values)
    sort_by_positions(positions, values, out, np.empty(len(values), np.uint64),
                      lambda targets: np.array([where[t] for t in targets.tolist()]))
    np.testing.assert_array_equal(out, values[np.argsort(positions)])


def test_py1e_locates_ids_around_empty_spans() -> None:
    values = np.array([12, 10, 11, 30, 31, 5], np.int64)
    begins = np.array([10, 13, 30, 5, 13], np.int64)  # spans of 3, 0, 2, 1, 0 ids
    sizes = np.array([3, 0, 2, 1, 0], np.int64)
    locate = _locator(values, begins, sizes, np.cumsum(sizes) - sizes)
    assert locate(np.array([11, 31, 5, 12])).tolist() == [2, 4, 5, 0]


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**63), size=st.integers(0, 3000))
def test_generator_equivalences_we_rely_on(seed: int, size: int) -> None:
    """The reference shuffles Python lists and fresh aranges; we shuffle index arrays and views."""
    listed, indexed, viewed = (np.random.default_rng(seed) for _ in range(3))
    items = [(i, i + 1) for i in range(size)]
    listed.shuffle(items)
    perm = np.arange(size, dtype=np.int64)
    indexed.shuffle(perm)
    assert [begin for begin, _ in items] == perm.tolist()
    host = np.arange(size + 9, dtype=np.int64) - 4
    viewed.shuffle(host[4:4 + size])  # a slice of a bigger buffer, as fill_and_shuffle does
    assert host[4:4 + size].tolist() == perm.tolist()
    assert listed.random() == indexed.random() == viewed.random()  # same draws consumed


def _canonical_node_dense(ids: np.ndarray, c: int, p: int, node: int) -> np.ndarray:
    """Spec §6.1 steps 3-5 for P <= C, built whole: one row per canonical node (a short row
    repeats its last id), the matrix read column by column, every P-th element from `node`."""
    n = len(ids)
    spc = -(-n // c)
    rows = []
    for r in range(c):
        row = list(ids[r * n // c:(r + 1) * n // c])
        rows.append(row + [row[-1]] * (spc - len(row)))
    return np.asarray(rows).T.reshape(-1)[node::p]


@settings(max_examples=150, deadline=None)
@given(c=st.sampled_from([1, 2, 3, 4, 6, 8, 12, 40]), data=st.data())
def test_canonical_rows_read_as_the_dense_matrix(c: int, data: st.DataObject) -> None:
    """`CanonicalMatrix.read` builds a request's grid for all of a node's rows at once (a
    loop over rows was 250x slower than the reference at 10^5 canonical nodes)."""
    from streaming.order.partition.canon import CanonicalMatrix

    p = data.draw(st.sampled_from([d for d in range(1, c + 1) if c % d == 0]))
    n = data.draw(st.integers(c + 1, 500))
    node = data.draw(st.integers(0, p - 1))
    ids = np.random.default_rng(n).permutation(n).astype(np.int64)
    table = data.draw(st.sampled_from([None, ids]))
    expected = _canonical_node_dense(np.arange(n) if table is None else ids, c, p, node)
    matrix = CanonicalMatrix(n, c, p, table)
    assert matrix.node_length(p) == len(expected)
    begin = data.draw(st.integers(0, len(expected)))
    end = data.draw(st.integers(begin, len(expected)))
    assert matrix.read(node, p, begin, end).tolist() == expected[begin:end].tolist()
