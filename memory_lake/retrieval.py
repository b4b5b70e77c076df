"""Value-driven retrieval (DESIGN.md section 5, paper section 1.5).

1. a candidate pool of K = lam * n items by similarity (a pluggable ``SimilarityScorer``; the
   default ``Bm25Scorer`` is BM25 over the postings table plus op-category and backend matches);
2. n items chosen from the pool: ``value`` = epsilon-greedy by the stage's Q (each slot: with
   probability epsilon a uniform draw from the rest of the pool, else the highest Q, ties by
   similarity then item id), ``heuristic`` = the n most similar (the paper's ablation);
3. in drafting (stage 1) the active backend's api_templates are added in front.
Randomness comes only from ``random.Random(seed)``: the same lake and request give the same result.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Protocol

import duckdb

from memory_lake.models import RetrievalRequest
from memory_lake.sqlfiles import sql
from memory_lake.text import query_terms


@dataclass(frozen=True)
class Candidate:
    item_id: str
    similarity: float
    q: float = 0.0


@dataclass(frozen=True)
class Choice:
    candidate: Candidate
    explored: bool
    strategy: str  # value | heuristic | template


class SimilarityScorer(Protocol):
    """Scores items against a request; returns at most ``k`` candidates, best first."""

    def pool(self, con: duckdb.DuckDBPyConnection, req: RetrievalRequest, kinds: tuple[str, ...],
             k: int) -> list[Candidate]: ...


@dataclass(frozen=True)
class Bm25Scorer:
    """BM25 (k1, b) over task text vs item text, plus weights for category and backend matches.

    ``max_query_terms`` bounds the terms looked up (the first distinct ones of the task text).
    When fewer than k items share a term with the task, items of the same category or backend
    fill the pool.
    """

    k1: float = 1.2
    b: float = 0.75
    w_category: float = 1.0
    w_backend: float = 0.5
    max_query_terms: int | None = 64
    corpus_stats: Callable[[duckdb.DuckDBPyConnection], tuple[int, float]] | None = None

    def pool(self, con, req, kinds, k):
        if k <= 0:
            return []
        terms = query_terms(req.task_text, self.max_query_terms)
        n_docs, avg_len = self.corpus_stats(con) if self.corpus_stats else _corpus_stats(con)
        common = {"kinds": list(kinds), "exclude": list(req.exclude_item_ids), "category": req.category,
                  "backend": req.backend, "w_category": self.w_category, "w_backend": self.w_backend, "k": k}
        found: list[Candidate] = []
        if terms and n_docs:
            rows = con.execute(sql("bm25_pool"), {**common, "terms": terms, "n_docs": float(n_docs),
                                                 "avg_doc_len": max(avg_len, 1.0), "k1": self.k1, "b": self.b}).fetchall()
            found = [Candidate(item_id, float(score)) for item_id, score in rows]
        if len(found) < k:
            seen = {c.item_id for c in found}
            extra = con.execute(sql("feature_pool"), {**common, "k": k + len(seen)}).fetchall()
            found += [Candidate(i, float(s)) for i, s in extra if i not in seen][: k - len(found)]
        return found


def _corpus_stats(con: duckdb.DuckDBPyConnection) -> tuple[int, float]:
    n_docs, avg_len = con.execute(sql("corpus_stats")).fetchall()[0]
    return int(n_docs), float(avg_len)


def choose(pool: list[Candidate], req: RetrievalRequest) -> list[Choice]:
    """Pick req.n items from the pool with the request's strategy (seeded, reproducible)."""
    if req.strategy == "heuristic":
        ranked = sorted(pool, key=lambda c: (-c.similarity, c.item_id))
        return [Choice(c, False, "heuristic") for c in ranked[: req.n]]
    return epsilon_greedy(pool, req.n, req.epsilon, random.Random(req.seed))


def epsilon_greedy(pool: list[Candidate], n: int, epsilon: float, rng: random.Random) -> list[Choice]:
    """n picks without replacement: explore (uniform) with probability epsilon, else highest Q."""
    remaining = sorted(pool, key=lambda c: (-c.q, -c.similarity, c.item_id))
    chosen: list[Choice] = []
    while remaining and len(chosen) < n:
        explore = rng.random() < epsilon
        index = rng.randrange(len(remaining)) if explore else 0
        chosen.append(Choice(remaining.pop(index), explore, "value"))
    return chosen


def pool_kinds(req: RetrievalRequest, all_kinds: tuple[str, ...]) -> tuple[str, ...]:
    """Kinds eligible for the pool: api_templates are added separately when drafting with templates."""
    kinds = req.kinds or all_kinds
    if templates_added(req):
        kinds = tuple(k for k in kinds if k != "api_template")
    return tuple(kinds)


def templates_added(req: RetrievalRequest) -> bool:
    return req.stage == 1 and req.include_templates
