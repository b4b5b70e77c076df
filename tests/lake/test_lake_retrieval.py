"""Retrieval: pool by similarity, epsilon-greedy by Q, templates, heuristic, recording."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lake_fixtures import SEEDS

from memory_lake import Lake, NewItem, RetrievalRequest, ValueUpdate
from memory_lake.retrieval import Candidate, epsilon_greedy

OPS = ("relu", "gelu", "softmax", "matmul", "conv2d", "layernorm", "maxpool", "cumsum")
TASK = "elementwise relu activation kernel: vectorize the inner loop with simd and fuse the epilogue"


@pytest.fixture(scope="module")
def valued_lake(lake_factory):
    """40 items over 8 ops, each with a distinct Q1 and Q2."""
    lake = Lake.create(lake_factory.new(), "cpu", SEEDS)
    items = [NewItem(kind=("experience", "trace", "best_practice")[i % 3], backend="cpu", task_id=f"L1_{i % 8}",
                     category="activation" if OPS[i % 8] in ("relu", "gelu") else "other",
                     title=f"{OPS[i % 8]} kernel {i}", body=f"{OPS[i % 8]} kernel: vectorize loop {i} with simd, "
                     f"tile {8 * (i % 4 + 1)}") for i in range(40)]
    ids = lake.add_items(items)
    rng = random.Random(7)
    lake.update_values([ValueUpdate(i, stage, rng.uniform(-1, 1), 1.0) for i in ids for stage in (1, 2)])
    yield lake
    lake.close()


def request(**overrides) -> RetrievalRequest:
    base = dict(attempt_id="att", task_id="L1_new", task_text=TASK, category="activation", backend="cpu",
                stage=2, n=4, lam=3, epsilon=0.0, seed=0)
    return RetrievalRequest(**{**base, **overrides})


def heuristic_pool(lake: Lake, n: int, lam: int, stage: int) -> list[str]:
    """The pool itself: the heuristic strategy with n = K returns it in similarity order."""
    got = lake.retrieve(request(strategy="heuristic", n=n * lam, lam=1, stage=stage, include_templates=False))
    return [r.item_id for r in got]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 8), lam=st.integers(1, 4), stage=st.sampled_from([1, 2]))
def test_greedy_retrieval_takes_the_top_q_of_the_pool(valued_lake, n, lam, stage):
    pool = heuristic_pool(valued_lake, n, lam, stage)
    got = [r for r in valued_lake.retrieve(request(n=n, lam=lam, stage=stage, include_templates=False))]
    assert len(got) == min(n, len(pool))
    assert {r.item_id for r in got} <= set(pool)
    pool_q = valued_lake.current_q(pool, stage)
    assert [r.q_value for r in got] == sorted(pool_q.values(), reverse=True)[: len(got)]
    assert [r.rank for r in got] == list(range(len(got))) and not any(r.explored for r in got)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31), epsilon=st.floats(0.0, 1.0), stage=st.sampled_from([1, 2]))
def test_retrieval_is_reproducible_for_a_seed(valued_lake, seed, epsilon, stage):
    first = valued_lake.retrieve(request(seed=seed, epsilon=epsilon, stage=stage))
    again = valued_lake.retrieve(request(seed=seed, epsilon=epsilon, stage=stage))
    assert first == again


@settings(max_examples=30, deadline=None)
@given(epsilon=st.floats(0.0, 1.0), seed=st.integers(0, 2**31))
def test_epsilon_greedy_explores_at_the_given_rate(epsilon, seed):
    pool = [Candidate(f"i{k}", similarity=1.0, q=float(k)) for k in range(50)]
    rng = random.Random(seed)
    draws = [c.explored for _ in range(400) for c in epsilon_greedy(pool, 3, epsilon, rng)]
    rate, count = sum(draws) / len(draws), len(draws)
    tolerance = 5 * (epsilon * (1 - epsilon) / count) ** 0.5 + 1e-9  # 5 standard deviations
    assert abs(rate - epsilon) <= tolerance


@settings(max_examples=30, deadline=None)
@given(qs=st.lists(st.floats(-1, 1), min_size=1, max_size=30), n=st.integers(0, 40), seed=st.integers(0, 99))
def test_epsilon_greedy_respects_n_and_never_repeats(qs, n, seed):
    pool = [Candidate(f"i{k}", 0.0, q) for k, q in enumerate(qs)]
    got = epsilon_greedy(pool, n, 0.3, random.Random(seed))
    assert len(got) == min(n, len(pool))
    assert len({c.candidate.item_id for c in got}) == len(got)
    exploited = [c.candidate.q for c in got if not c.explored]
    # by value (equal similarities); Q values closer than the z-score's floor on the spread count as tied
    assert all(a >= b - 1e-9 for a, b in zip(exploited, exploited[1:])), exploited


def test_drafting_adds_the_backends_templates_first(valued_lake):
    got = valued_lake.retrieve(request(stage=1, n=3))
    templates = [r for r in got if r.strategy == "template"]
    assert [r.title for r in templates] == [s.title for s in SEEDS]
    assert [r.rank for r in templates] == [0, 1]
    assert len(got) == len(SEEDS) + 3 and all(r.kind != "api_template" for r in got[2:])
    assert not any(r.strategy == "template" for r in valued_lake.retrieve(request(stage=2, n=3)))


def test_pool_prefers_matching_text(valued_lake):
    got = valued_lake.retrieve(request(strategy="heuristic", n=5, include_templates=False))
    assert all("relu" in r.title for r in got[:5])
    assert [r.similarity for r in got] == sorted((r.similarity for r in got), reverse=True)


def test_kinds_and_exclusions_filter_candidates(valued_lake):
    first = valued_lake.retrieve(request(kinds=("trace",), n=10))
    assert first and {r.kind for r in first} == {"trace"}
    excluded = tuple(r.item_id for r in first[:2])
    again = valued_lake.retrieve(request(kinds=("trace",), n=10, exclude_item_ids=excluded))
    assert not set(excluded) & {r.item_id for r in again}


def test_every_retrieval_is_recorded_with_rank_and_scores(valued_lake):
    got = valued_lake.retrieve(request(attempt_id="recorded-1", stage=1, n=3, epsilon=0.5, seed=3))
    rows = valued_lake.query("SELECT * FROM retrievals WHERE attempt_id = ? ORDER BY rank", ["recorded-1"]).to_pylist()
    assert [(r["item_id"], r["rank"], r["strategy"], r["explored"]) for r in rows] == \
        [(g.item_id, g.rank, g.strategy, g.explored) for g in got]
    assert all(r["stage"] == 1 and r["similarity"] is not None and r["q_value"] is not None for r in rows)


def test_new_batches_are_seen_by_the_next_retrieval(valued_lake):
    (fresh,) = valued_lake.add_items([NewItem("experience", "cpu", "cumsum zebra unique", "zebraword scan")])
    got = valued_lake.retrieve(request(task_text="zebraword", strategy="heuristic", n=1, include_templates=False))
    assert got[0].item_id == fresh


def test_text_free_pool_falls_back_to_category(lake_factory):
    lake = Lake.create(lake_factory.new(), "cpu")
    lake.add_items([NewItem("experience", "cpu", "norm", "layer statistics", category="normalization")])
    got = lake.retrieve(request(task_text="qqq", category="normalization", include_templates=False))
    assert [r.title for r in got] == ["norm"]
