"""Fast retrieval at scale: champion lists written by compaction, row-group-pruned keyed reads,
and the caches (items, templates, summed document frequencies) -- results must not change."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lake_fixtures import SEEDS

from memory_lake import Lake, NewItem, RetrievalRequest
from memory_lake.engine import transaction
from memory_lake.keyed_reads import KeyedReader, matching_groups
from memory_lake.retrieval import ScoringContext
from memory_lake.text import query_terms

OPS = ("relu", "gelu", "softmax", "matmul", "conv2d", "layernorm")
TASK = "relu activation kernel: vectorize the inner loop with simd, tile the rows and fuse the epilogue"
KINDS = ("experience", "trace", "best_practice")


def build(root, batches: int = 4, per_batch: int = 15) -> Lake:
    lake = Lake.create(root, "cpu", SEEDS)
    for b in range(batches):
        lake.add_items([NewItem(kind=KINDS[i % 3], backend="cpu", task_id=f"L1_{i % 5}",
                                category="activation" if i % 2 else "other",
                                title=f"{OPS[(b + i) % 6]} kernel {b}-{i}",
                                body=f"{OPS[i % 6]} vectorize loop {'simd ' * (i % 4)}tile {i % 7} rows epilogue {b}")
                        for i in range(per_batch)])
    return lake


def pool(lake: Lake, k: int = 25) -> list[tuple[str, float]]:
    req = RetrievalRequest(attempt_id="a", task_id="L1_x", task_text=TASK, category="activation", backend="cpu",
                           stage=1, n=k, lam=1, strategy="heuristic", include_templates=False)
    return [(r.item_id, round(r.similarity, 9)) for r in lake.retrieve(req)]


def exhaustive_bm25(lake: Lake, k: int) -> list[tuple[str, float]]:
    """BM25 + feature bonuses computed in Python from the full postings (the reference)."""
    scorer = lake.scorer
    n_docs, total, df = scorer.corpus(ScoringContext(lake._con, lake.files()))
    terms = set(scorer.select_terms(query_terms(TASK), df, n_docs))
    avg = max(total / n_docs, 1.0)
    rows = lake.query("SELECT term, item_id, tf, doc_len, kind, category, backend FROM postings").to_pylist()
    scores: dict[str, float] = {}
    for r in rows:
        if r["term"] not in terms:  # no kind filter: templates are pool items without include_templates
            continue
        idf = math.log(1 + (n_docs - df[r["term"]] + 0.5) / (df[r["term"]] + 0.5))
        weight = r["tf"] * (scorer.k1 + 1) / (r["tf"] + scorer.k1 * (1 - scorer.b + scorer.b * r["doc_len"] / avg))
        bonus = scorer.w_category * (r["category"] == "activation") + scorer.w_backend * (r["backend"] == "cpu")
        scores[r["item_id"]] = scores.get(r["item_id"], bonus) + idf * weight
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [(i, round(s, 9)) for i, s in ranked]


def test_champions_match_exhaustive_bm25_and_compaction_changes_nothing(lake_factory):
    lake = build(lake_factory.new())
    before = pool(lake)
    assert before == exhaustive_bm25(lake, 25)
    lake.compact()
    assert lake.files().paths("champions"), "compaction writes champion lists"
    assert pool(lake) == before  # k (1000) exceeds every term's posting count: identical pool
    lake.add_items([NewItem(kind="trace", backend="cpu", title="relu zzyzx", body="relu zzyzx tile rows " * 5)])
    assert pool(lake)[0][0] == exhaustive_bm25(lake, 1)[0][0]  # uncompacted batches are read in full
    lake.compact()
    assert pool(lake) == exhaustive_bm25(lake, 25)


def test_champion_lists_keep_top_k_per_term_and_kind(lake_factory):
    lake = build(lake_factory.new())
    lake.compact(champions_k=2)
    champions = lake.query("SELECT term, kind, item_id FROM champions").to_pylist()
    postings = lake.query("SELECT term, kind, item_id, tf, doc_len FROM postings").to_pylist()
    avg = lake.query("SELECT avg(doc_len) AS a FROM docs").column("a")[0].as_py()
    groups: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for r in postings:
        weight = r["tf"] * 2.2 / (r["tf"] + 1.2 * (0.25 + 0.75 * r["doc_len"] / avg))
        groups.setdefault((r["term"], r["kind"]), []).append((-weight, r["item_id"]))
    expected = {(t, kd, i) for (t, kd), ws in groups.items() for _, i in sorted(ws)[:2]}
    assert {(r["term"], r["kind"], r["item_id"]) for r in champions} == expected
    found = pool(lake, 10)
    assert len(found) == 10 and all(s > 0 for _, s in found)  # an approximation, still a full pool


def test_lake_without_champion_lists_reads_full_postings(lake_factory):
    lake = build(lake_factory.new())
    lake.compact()
    expected = pool(lake)
    lake.close()
    reopened = Lake.open(lake.root)
    transaction(reopened._con, lambda c: (c.execute("DELETE FROM champions"), c.execute("DELETE FROM champion_sources")))
    assert not reopened.files().paths("champions")
    assert pool(reopened) == expected
    reopened.add_items([NewItem(kind="trace", backend="cpu", title="x", body="y")])
    assert reopened.compact().tables  # merges the new batch and rebuilds the champion lists
    assert reopened.files().paths("champions")


def test_champions_are_ignored_once_a_source_file_was_merged_away(lake_factory):
    lake = build(lake_factory.new())
    lake.compact(champions_k=1)  # tiny champion lists: pools drawn from them miss items
    lake.add_items([NewItem(kind="trace", backend="cpu", title="relu tile", body="relu tile rows simd")])
    lake._con.execute("CALL ducklake_merge_adjacent_files('lake')").fetchall()  # no champion rebuild
    files = lake.files()
    assert files.covered and not files.covered <= set(files.paths("postings"))
    assert pool(lake) == exhaustive_bm25(lake, 25)  # no double counting, nothing missed


def test_items_and_templates_are_served_identically_from_caches(lake_factory):
    lake = build(lake_factory.new(), batches=2)
    req = RetrievalRequest(attempt_id="a", task_id="L1_x", task_text=TASK, category="activation", backend="cpu",
                           stage=1, n=5, lam=3, epsilon=0.0, seed=1)
    first = lake.retrieve(req)
    assert [r.strategy for r in first[: len(SEEDS)]] == ["template"] * len(SEEDS)
    assert lake.retrieve(req) == first
    lake.compact()
    assert lake.retrieve(req) == first
    title = lake.query("SELECT title FROM items WHERE item_id = $i", {"i": first[-1].item_id}).column(0)[0].as_py()
    assert first[-1].title == title
    excluded = RetrievalRequest(**{**req.__dict__, "exclude_item_ids": (first[0].item_id,)})
    assert first[0].item_id not in [r.item_id for r in lake.retrieve(excluded)]


def test_keyed_reads_prune_row_groups_but_return_exact_rows(tmp_path):
    keys = [f"k{i:04d}" for i in range(1000)]
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"key": keys, "v": list(range(1000))}), path, row_group_size=100)
    reader = KeyedReader()
    got = reader.read(path, "key", ["k0005", "k0950", "k0950", "zzz"], ["key", "v"])
    assert got.to_pylist() == [{"key": "k0005", "v": 5}, {"key": "k0950", "v": 950}]
    assert reader.read(path, "key", ["a"], ["key", "v"]).num_rows == 0
    ranges = [("a", "c"), None, ("d", "f"), ("g", "h")]
    assert matching_groups(ranges, ["b", "e"]) == [0, 1, 2]  # no statistics: always read
    assert matching_groups(ranges, ["zz"]) == [1]


@pytest.mark.parametrize("batches", [1, 3])
def test_summed_document_frequencies_follow_the_file_set(lake_factory, batches):
    lake = build(lake_factory.new(), batches=batches)
    ctx = ScoringContext(lake._con, lake.files())
    _, _, df = lake.scorer.corpus(ctx)
    rows = lake.query("SELECT term, count(*) AS n FROM postings GROUP BY term").to_pylist()
    direct = {r["term"]: r["n"] for r in rows}
    assert df == direct
    lake.add_items([NewItem(kind="trace", backend="cpu", title="relu", body="relu")])
    _, _, df2 = lake.scorer.corpus(ScoringContext(lake._con, lake.files()))
    assert df2["relu"] == direct["relu"] + 1
