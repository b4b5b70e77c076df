"""Value-driven retrieval (DESIGN.md section 5, paper section 1.5).

1. a candidate pool of K = lam * n items by similarity (a pluggable ``SimilarityScorer``; the
   default ``Bm25Scorer`` is BM25 over the postings table plus op-category and backend matches);
2. n items chosen from the pool: ``value`` = epsilon-greedy by the item's score (each slot: with
   probability epsilon a uniform draw from the rest of the pool, else the highest score, ties by
   similarity then item id), ``heuristic`` = the n most similar (the paper's ablation). The score
   blends similarity and the stage's Q as MemRL does, ``(1 - w) z(similarity) + w z(Q)`` with both
   z-scored over the pool and ``w = q_weight`` (1: the highest Q, ties by similarity); an item never
   updated at the stage has the request's prior Q (``q_prior_related`` for a lesson of the task itself
   or its op category, when set), so an untried item competes by its similarity and Q decides once it
   has one;
3. in drafting (stage 1) the active backend's api_templates are added in front, unless the request
   says ``include_templates=False`` (the agent's: templates then compete in the pool like any item).

Between 1 and 2, :func:`eligible` applies the request's relevance rules (refining uses them, so a
refine prompt gets fewer items rather than noise): only optimisation traces (feasible, with a
measured speedup) among traces; the task's own traces left out (a refine prompt shows its own
kernels anyway: the start point and its children); of each task's feasible traces only its fastest in
the pool (its kernels are variants of one another); items of other op categories only with a similarity of
at least ``min_relevance`` of the pool's best (an item of the task's own category is relevant by its
category: BM25 over a task's source matches boilerplate as readily as substance) and, where the
request sets a bound, a Q above it. ``category_first`` fills the slots from the task's category
before the others. :func:`select` is rules, cut and choice in one (the lake's and the learning
simulation's).
Randomness comes only from ``random.Random(seed)``: the same lake and request give the same result.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

import duckdb
import pyarrow as pa

from memory_lake.bm25 import Bm25Query, top_k
from memory_lake.keyed_reads import KeyedReader
from memory_lake.models import RetrievalRequest
from memory_lake.readstate import Files
from memory_lake.schema import POSTINGS
from memory_lake.sqlfiles import sql
from memory_lake.text import query_terms


LESSON_KINDS = ("experience", "best_practice")  # distilled items (q_prior_related applies to them)


@dataclass(frozen=True)
class Candidate:
    item_id: str
    similarity: float
    q: float = 0.0
    category: str | None = None  # the item's op category (set where the request's rules need it)


@dataclass(frozen=True)
class ItemFacts:
    """What the relevance rules read of a pool item (from its items row)."""

    kind: str
    category: str | None
    feasible: bool | None
    speedup: float | None
    task_id: str | None = None

    @property
    def optimisation_trace(self) -> bool:
        """A trace that can teach speed: its kernel passed every feasibility gate and was timed."""
        return self.kind == "trace" and bool(self.feasible) and self.speedup is not None and self.speedup > 0


@dataclass(frozen=True)
class Choice:
    candidate: Candidate
    explored: bool
    strategy: str  # value | heuristic | template


@dataclass(frozen=True)
class ScoringContext:
    """What a scorer may use: the lake's connection, a scratch connection for computing over data
    files and Arrow tables (no catalog attached, so registering a table costs no catalog round
    trip), and the data files of one snapshot."""

    con: duckdb.DuckDBPyConnection
    files: Files
    reader: KeyedReader | None = None  # pruned reads of posting lists (Lake supplies one)
    scratch: duckdb.DuckDBPyConnection | None = None  # default: con

    @property
    def compute(self) -> duckdb.DuckDBPyConnection:
        return self.scratch or self.con


class SimilarityScorer(Protocol):
    """Scores items against a request; returns at most ``k`` candidates, best first."""

    def pool(self, ctx: ScoringContext, req: RetrievalRequest, kinds: tuple[str, ...], k: int) -> list[Candidate]: ...


class Bm25Scorer:
    """BM25 (k1, b) over task text vs item text, plus weights for category and backend matches.

    Corpus statistics (document frequency per term, number and mean length of documents) are
    kept per Parquet data file and summed, so a new batch costs one small scan and a compaction
    one full scan; data files are immutable, so the cache never goes stale (the sum over the current file
    set is cached too). Query terms are the task's
    distinct terms that occur in the lake, minus those in more than ``max_df_ratio`` of all
    items (their idf is tiny and they dominate the scan), at most ``max_query_terms`` of the
    highest idf. When fewer than k items share a term with the task, items of the same category
    or backend fill the pool.

    Posting lists are read per query term from each postings file with row-group pruning
    (keyed_reads.py) and scored in numpy (bm25.py). The postings files compaction built champion
    lists from are replaced by those lists (per term and kind, the CHAMPIONS_K postings of highest
    BM25 term weight): an item outside a term's champions gets no score for that term. Files
    written since are always read in full, so a new item is never missed. Document frequencies
    and lengths still come from the full postings and docs.

    Why not DuckDB's FTS extension: its index is a snapshot of one table in a DuckDB database
    file, rebuilt from scratch after every append (a campaign appends after every attempt) and
    not stored in the lake, so other processes and machines cannot share it; these postings are
    ordinary lake rows, appended with their items in the same transaction (benchmarks/lake_scale
    compares both at 1M items).
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75, w_category: float = 1.0, w_backend: float = 0.5,
                 max_query_terms: int = 32, max_df_ratio: float = 0.25) -> None:
        self.k1, self.b, self.w_category, self.w_backend = k1, b, w_category, w_backend
        self.max_query_terms, self.max_df_ratio = max_query_terms, max_df_ratio
        self._df_by_file: dict[str, dict[str, int]] = {}
        self._docs_by_file: dict[str, tuple[int, int]] = {}
        self._df_sum: tuple[tuple[str, ...], dict[str, int]] | None = None

    def pool(self, ctx, req, kinds, k):
        if k <= 0:
            return []
        n_docs, total_len, df = self.corpus(ctx)
        terms = self.select_terms(query_terms(req.task_text), df, n_docs)
        common = {"kinds": list(kinds), "exclude": list(req.exclude_item_ids), "category": req.category,
                  "backend": req.backend, "w_category": self.w_category, "w_backend": self.w_backend}
        found: list[Candidate] = []
        if terms:
            query = Bm25Query(dfs={t: df[t] for t in terms}, n_docs=n_docs, avg_doc_len=max(total_len / n_docs, 1.0),
                              k1=self.k1, b=self.b, kinds=kinds, exclude=req.exclude_item_ids, category=req.category,
                              backend=req.backend, w_category=self.w_category, w_backend=self.w_backend)
            found = [Candidate(item_id, score) for item_id, score in top_k(query_postings(ctx, terms), query, k)]
        if len(found) < k:
            seen = {c.item_id for c in found}
            extra = ctx.con.execute(sql("feature_pool"), {**common, "k": k + len(seen)}).fetchall()
            found += [Candidate(i, float(s)) for i, s in extra if i not in seen][: k - len(found)]
        return found

    def select_terms(self, terms: list[str], df: dict[str, int], n_docs: int) -> list[str]:
        present = [t for t in terms if df.get(t)]
        kept = [t for t in present if df[t] <= self.max_df_ratio * n_docs] or present
        return sorted(kept, key=lambda t: (df[t], t))[: self.max_query_terms]

    def corpus(self, ctx: ScoringContext) -> tuple[int, int, dict[str, int]]:
        """(number of items, total tokens, df per term) over the visible files, cached per file."""
        docs_files = ctx.files.paths("docs")
        post_files = ctx.files.paths("postings")
        for path in docs_files:
            if path not in self._docs_by_file:
                self._docs_by_file[path] = _docs_stats(ctx, path)
        for path in post_files:
            if path not in self._df_by_file:
                self._df_by_file[path] = _term_df(ctx, path)
        self._docs_by_file = {p: self._docs_by_file[p] for p in docs_files}
        self._df_by_file = {p: self._df_by_file[p] for p in post_files}
        n_docs = sum(n for n, _ in self._docs_by_file.values())
        total = sum(t for _, t in self._docs_by_file.values())
        key = tuple(post_files)
        if self._df_sum is None or self._df_sum[0] != key:
            self._df_sum = (key, _sum_df(list(self._df_by_file.values())))
        return n_docs, total, self._df_sum[1]


def _sum_df(per_file: list[dict[str, int]]) -> dict[str, int]:
    if len(per_file) == 1:
        return per_file[0]
    df: dict[str, int] = {}
    for counts in per_file:
        for term, count in counts.items():
            df[term] = df.get(term, 0) + count
    return df


_DICTIONARY = ("term", "kind", "backend", "category")  # few distinct values: decoded cheaply
_LOCAL_READER = KeyedReader()  # for contexts built without a reader (local files)


def posting_sources(files: Files) -> list[str]:
    """The files retrieval reads posting lists from: the champion lists instead of the postings
    files they were built from (only while all of those are still current: a file merged away
    since would otherwise count twice), plus every postings file written since, in full."""
    postings = files.paths("postings")
    champions = files.paths("champions")
    if not champions or not files.covered or not files.covered <= set(postings):
        return postings
    return champions + [p for p in postings if p not in files.covered]


def query_postings(ctx: ScoringContext, terms: list[str]) -> pa.Table:
    """The postings of ``terms`` (champion lists for compacted files), read with row-group pruning."""
    sources = posting_sources(ctx.files)
    reader = ctx.reader or _LOCAL_READER
    parts = [reader.read(p, "term", terms, POSTINGS.names, dictionary=_DICTIONARY, cached=True) for p in sources]
    parts = [t for t in parts if t.num_rows]
    return pa.concat_tables(parts) if parts else POSTINGS.empty_table()


def _docs_stats(ctx: ScoringContext, path: str) -> tuple[int, int]:
    rel = ctx.compute.read_parquet(path).aggregate("count(*), coalesce(sum(doc_len), 0)")
    n, total = rel.fetchall()[0]
    return int(n), int(total)


def _term_df(ctx: ScoringContext, path: str) -> dict[str, int]:
    rel = ctx.compute.read_parquet(path).aggregate("term, count(*)", "term")
    return dict(rel.fetchall())


def filters(req: RetrievalRequest) -> bool:
    """Whether the request has relevance rules (or priors) that need the pool items' facts."""
    return req.feasible_traces_only or req.min_relevance > 0 or req.category_first \
        or req.other_categories_min_q is not None or req.fastest_trace_per_task or req.other_tasks_traces_only \
        or req.q_prior_related is not None


def with_priors(pool: list[Candidate], req: RetrievalRequest, facts: dict[str, ItemFacts] | None,
                untried: set[str]) -> list[Candidate]:
    """The pool with each untried item's Q set to its prior: ``q_prior_related`` for a lesson (an
    experience or best practice) of the request's own task or op category, when set and the item's
    facts are known, else as given."""
    if req.q_prior_related is None or not facts or not untried:
        return pool

    def related(item_id: str) -> bool:
        fact = facts.get(item_id)
        return fact is not None and fact.kind in LESSON_KINDS and (
            (req.task_id is not None and fact.task_id == req.task_id)
            or (req.category is not None and fact.category == req.category))
    return [Candidate(c.item_id, c.similarity, req.q_prior_related, c.category)
            if c.item_id in untried and related(c.item_id) else c for c in pool]


def eligible(pool: list[Candidate], req: RetrievalRequest, facts: dict[str, ItemFacts]) -> list[Candidate]:
    """The pool items the request's relevance rules admit, with their categories (see module doc).
    The floor is relative to the best similarity among the admitted items of other tasks (the task's
    own kernels match its text almost entirely: beside them every lesson would look like noise)."""
    admitted = [c for c in pool if (fact := facts.get(c.item_id)) is not None
                and not (req.feasible_traces_only and fact.kind == "trace" and not fact.optimisation_trace)
                and not (req.other_tasks_traces_only and fact.kind == "trace" and fact.task_id == req.task_id)]
    if req.fastest_trace_per_task:
        admitted = _fastest_trace_per_task(admitted, facts)
    top = max((c.similarity for c in admitted if req.task_id is None or facts[c.item_id].task_id != req.task_id),
              default=0.0)
    kept = []
    for c in admitted:
        fact = facts[c.item_id]
        other = req.category is None or fact.category != req.category
        if other and req.min_relevance > 0 and c.similarity < req.min_relevance * top:
            continue  # the task's own category is relevant by itself; text overlap alone is weak evidence
        if other and req.category is not None and req.other_categories_min_q is not None \
                and not c.q > req.other_categories_min_q:
            continue
        kept.append(Candidate(c.item_id, c.similarity, c.q, fact.category))
    return kept


def _fastest_trace_per_task(pool: list[Candidate], facts: dict[str, ItemFacts]) -> list[Candidate]:
    """Of each task's optimisation traces in the pool only the fastest (ties: the first in the pool)."""
    fastest: dict[str, str] = {}
    for c in pool:
        fact = facts[c.item_id]
        if fact.optimisation_trace and fact.task_id is not None:
            held = fastest.get(fact.task_id)
            if held is None or fact.speedup > facts[held].speedup:
                fastest[fact.task_id] = c.item_id
    return [c for c in pool if not (facts[c.item_id].optimisation_trace and facts[c.item_id].task_id is not None
                                    and fastest[facts[c.item_id].task_id] != c.item_id)]


def select(pool: list[Candidate], req: RetrievalRequest, facts: dict[str, ItemFacts] | None,
           untried: set[str] = frozenset()) -> list[Choice]:
    """The untried items' priors, the request's relevance rules (with the pool items' facts), the pool
    cut to its size, the choice."""
    pool = with_priors(pool, req, facts, untried)
    if filters(req):
        pool = eligible(pool, req, facts or {})
    return choose(pool[: req.pool_size], req)


def choose(pool: list[Candidate], req: RetrievalRequest) -> list[Choice]:
    """Pick req.n (+ req.spare) items from the pool with the request's strategy (seeded,
    reproducible); with ``category_first``, from the task's category first, then from the others."""
    tiers = [pool]
    if req.category_first and req.category is not None:
        tiers = [[c for c in pool if c.category == req.category], [c for c in pool if c.category != req.category]]
    rng, chosen = random.Random(req.seed), []
    for tier in tiers:
        left = req.n + req.spare - len(chosen)
        if left <= 0:
            break
        if req.strategy == "heuristic":
            ranked = sorted(tier, key=lambda c: (-c.similarity, c.item_id))
            chosen += [Choice(c, False, "heuristic") for c in ranked[:left]]
        else:
            chosen += epsilon_greedy(tier, left, req.epsilon, rng, req.q_weight)
    return chosen


def blended_scores(pool: list[Candidate], q_weight: float) -> dict[str, float]:
    """(1 - w) z(similarity) + w z(Q) per item, z-scored over the pool (a constant column scores 0)."""
    sims, qs = _z([c.similarity for c in pool]), _z([c.q for c in pool])
    return {c.item_id: (1.0 - q_weight) * s + q_weight * q for c, s, q in zip(pool, sims, qs)}


def _z(values: list[float]) -> list[float]:
    if not values:
        return []
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return [(v - mean) / std if std > 1e-12 else 0.0 for v in values]


def epsilon_greedy(pool: list[Candidate], n: int, epsilon: float, rng: random.Random,
                   q_weight: float = 1.0) -> list[Choice]:
    """n picks without replacement: explore (uniform) with probability epsilon, else the highest
    blended score (:func:`blended_scores`; q_weight 1: the highest Q), ties by similarity."""
    score = blended_scores(pool, q_weight)
    remaining = sorted(pool, key=lambda c: (-score[c.item_id], -c.similarity, c.item_id))
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
