"""The retrieval pool's BM25 arithmetic (memory_lake/bm25.py) against a plain-Python reference, and
the keyed reader's per-key row cache and bisection against uncached reads and a linear scan."""

from __future__ import annotations

import math
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memory_lake.bm25 import Bm25Query, top_k
from memory_lake.keyed_reads import GroupIndex, KeyedReader, matching_groups
from memory_lake.schema import POSTINGS

TERMS = ["gemm", "tile", "simd", "warp", "relu", "softmax", "omp"]
KINDS = ["experience", "trace", "best_practice"]


def postings(rng: random.Random, items: int = 60) -> pa.Table:
    rows = []
    for i in range(items):
        item = f"it-{i:03d}"
        kind, category, backend = rng.choice(KINDS), rng.choice(["matmul", "activation", None]), rng.choice(["cpu", "cuda"])
        doc_len = rng.randint(5, 80)
        for term in rng.sample(TERMS, rng.randint(1, 4)):
            rows.append({"term": term, "item_id": item, "tf": rng.randint(1, 5), "doc_len": doc_len, "kind": kind,
                         "backend": backend, "category": category})
    rng.shuffle(rows)
    return pa.Table.from_pylist(rows, schema=POSTINGS)


def reference(table: pa.Table, q: Bm25Query, k: int) -> list[tuple[str, float]]:
    """BM25 as the module docstring states it, one row at a time."""
    scores: dict[str, float] = {}
    bonus: dict[str, float] = {}
    for row in table.to_pylist():
        if row["term"] not in q.dfs or (q.kinds and row["kind"] not in q.kinds) or row["item_id"] in q.exclude:
            continue
        df = q.dfs[row["term"]]
        idf = math.log(1.0 + (q.n_docs - df + 0.5) / (df + 0.5))
        tf = row["tf"]
        weight = idf * tf * (q.k1 + 1) / (tf + q.k1 * (1 - q.b + q.b * row["doc_len"] / q.avg_doc_len))
        scores[row["item_id"]] = scores.get(row["item_id"], 0.0) + weight
        bonus[row["item_id"]] = (q.w_category * (row["category"] == q.category)
                                 + q.w_backend * (row["backend"] == q.backend))
    ranked = sorted(((-(s + bonus[i]), i) for i, s in scores.items()))
    return [(i, -s) for s, i in ranked[:k]]


@pytest.mark.parametrize("seed", range(12))
def test_top_k_matches_the_formula_with_filters_bonuses_and_ties(seed):
    rng = random.Random(seed)
    table = postings(rng)
    if seed % 2:  # string columns as keyed reads return them: dictionary-encoded, several chunks
        half = table.num_rows // 2
        table = pa.concat_tables([table.slice(0, half), table.slice(half)])
        for name in ("term", "kind", "backend", "category"):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, pa.chunked_array([c.dictionary_encode() for c in table.column(i).chunks]))
    query = Bm25Query(dfs={t: rng.randint(1, 50) for t in rng.sample(TERMS, 4)}, n_docs=200, avg_doc_len=40.0,
                      kinds=tuple(rng.sample(KINDS, 2)) if seed % 3 else (), category="matmul", backend="cpu",
                      exclude=("it-001", "it-007") if seed % 4 == 0 else ())
    for k in (1, 5, 100):
        got = top_k(table, query, k)
        want = reference(table, query, k)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)


def test_top_k_of_nothing():
    query = Bm25Query(dfs={"gemm": 3}, n_docs=10, avg_doc_len=5.0)
    assert top_k(POSTINGS.empty_table(), query, 5) == []
    assert top_k(postings(random.Random(0)), query, 0) == []


@pytest.mark.parametrize("cache_bytes", [0, 4_000, 10**9])  # off, evicting all the time, holding all
def test_cached_keyed_reads_return_exactly_the_uncached_rows(tmp_path, cache_bytes):
    rng = random.Random(1)
    keys = sorted(f"k{rng.randint(0, 400):04d}" for _ in range(3000))
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"key": keys, "v": list(range(len(keys))), "tag": [k[-1] for k in keys]}), path,
                   row_group_size=128)
    plain, cached = KeyedReader(), KeyedReader(cache_bytes=cache_bytes)
    for _ in range(40):
        wanted = rng.sample(sorted(set(keys)) + ["zzz", "a"], rng.randint(1, 12))
        want = plain.read(path, "key", wanted, ["key", "v", "tag"], dictionary=["tag"])
        got = cached.read(path, "key", wanted, ["key", "v", "tag"], dictionary=["tag"], cached=True)
        assert got.schema == want.schema
        assert sorted(got.to_pylist(), key=lambda r: r["v"]) == sorted(want.to_pylist(), key=lambda r: r["v"])
    assert cached._held == sum(t.nbytes for t in cached._rows.values()) <= cache_bytes  # the budget holds


def test_bisection_finds_the_groups_a_scan_finds():
    rng = random.Random(2)
    bounds = sorted(f"{rng.randint(0, 999):03d}" for _ in range(200))
    ranges = [(bounds[i], bounds[i + 1]) for i in range(0, 198, 2)]  # sorted, some keys span groups
    index = GroupIndex.of(ranges)
    assert index.maxs is not None
    for _ in range(200):
        wanted = sorted(f"{rng.randint(0, 999):03d}" for _ in range(rng.randint(1, 6)))
        assert index.matching(wanted) == matching_groups(ranges, wanted)
    interleaved = [("m", "p"), ("a", "c"), ("q", "t"), ("d", "f")]  # two sorted runs: scanned
    assert GroupIndex.of(interleaved).maxs is None
    assert GroupIndex.of(interleaved).matching(["b", "r"]) == [1, 2]
    assert GroupIndex.of([("a", "b"), None]).matching(["zz"]) == [1]
