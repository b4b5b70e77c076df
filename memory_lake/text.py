"""Text to terms: the tokenizer shared by indexing (append time) and querying (retrieval time),
and the postings/docs rows of an items batch."""

from __future__ import annotations

import re
from collections import Counter

import pyarrow as pa

from memory_lake.schema import DOCS, POSTINGS

_TOKEN = re.compile(r"[a-z][a-z0-9]*|[0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
STOP_WORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with "
    "self return import def".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word and number tokens; camelCase and snake_case identifiers are split too."""
    text = _CAMEL.sub(" ", text or "")
    return [t for t in _TOKEN.findall(text.lower()) if len(t) > 1 and t not in STOP_WORDS]


def embedding_text(title: str | None, category: str | None, body: str | None, code: str | None) -> str:
    """What the similarity scorer indexes for an item: title, category, body and code."""
    return "\n".join(part for part in (title, category, body, code) if part)


def query_terms(text: str, max_terms: int | None = None) -> list[str]:
    """Distinct query terms in order of first appearance."""
    terms = list(dict.fromkeys(tokenize(text)))
    return terms[:max_terms] if max_terms else terms


def index_rows(items: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The docs and postings rows for a batch of items (items must have embedding_text)."""
    docs: dict[str, list] = {name: [] for name in DOCS.names}
    posts: dict[str, list] = {name: [] for name in POSTINGS.names}
    cols = {name: items.column(name).to_pylist()
            for name in ("item_id", "kind", "backend", "task_id", "category", "embedding_text")}
    for i, item_id in enumerate(cols["item_id"]):
        counts = Counter(tokenize(cols["embedding_text"][i] or ""))
        doc_len = sum(counts.values())
        for name in ("item_id", "kind", "backend", "task_id", "category"):
            docs[name].append(cols[name][i])
        docs["doc_len"].append(doc_len)
        for term, tf in counts.items():
            posts["term"].append(term)
            posts["item_id"].append(item_id)
            posts["tf"].append(tf)
            posts["doc_len"].append(doc_len)
            posts["kind"].append(cols["kind"][i])
            posts["backend"].append(cols["backend"][i])
            posts["category"].append(cols["category"][i])
    postings = pa.Table.from_pydict(posts, schema=POSTINGS).sort_by([("term", "ascending"), ("item_id", "ascending")])
    return pa.Table.from_pydict(docs, schema=DOCS), postings  # postings sorted by term: row groups prune
