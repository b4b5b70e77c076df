"""The Lake: the one object callers use to write, read, retrieve from and value the memory.

A Lake keeps one resident DuckDB connection whose views are rebuilt only when the set of
committed files changes (new batches, compaction), so repeated retrievals pay for a directory
listing, not for a new connection. Retrieval reads posting lists and shown items with
row-group-pruned keyed reads (keyed_reads.py); item rows never change, so the last
ITEM_CACHE_SIZE shown items are cached, and the api_template list is cached per docs file set. The resident connection is guarded by a thread lock; use
``connect()`` for a private connection.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import duckdb
import pyarrow as pa

from memory_lake import compaction, retrieval, transfer, values
from memory_lake.errors import LakeError
from memory_lake.keyed_reads import KeyedReader
from memory_lake.models import (CompactionResult, NewItem, RetrievalRequest, RetrievedItem, SeedItemRow,
                                TableStats, ValueUpdate)
from memory_lake.rows import to_table
from memory_lake.schema import INTERNAL_TABLES, ITEM_KINDS, TABLES
from memory_lake.sqlfiles import sql
from memory_lake.storage import DataFile, Storage, new_batch_id
from memory_lake.text import embedding_text, index_rows
from memory_lake.views import install_views, new_connection

FORMAT_VERSION = 2  # 2: attempts carry the roofline columns (schema.GROWN_AT_FORMAT)
ITEM_CACHE_SIZE = 4096
ITEM_COLUMNS = ("item_id", "kind", "title", "body", "code", "task_id", "created_at")


def new_item_ids(count: int) -> list[str]:
    """Time-ordered ids: sorting by item_id is creation order (seed templates keep their order)."""
    base, salt = time.time_ns(), uuid.uuid4().hex[:12]
    return [f"it-{base + i:016x}-{salt}" for i in range(count)]


class Lake:
    def __init__(self, storage: Storage, meta: Mapping, scorer: retrieval.SimilarityScorer | None = None) -> None:
        self.storage = storage
        self.meta = dict(meta)
        self.q_init = float(self.meta.get("q_init", 0.0))
        self.backend = str(self.meta.get("backend", ""))
        self.format = int(self.meta.get("format", 1))
        self.scorer = scorer or retrieval.Bm25Scorer()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._files: dict[str, list[DataFile]] | None = None
        self._guard = threading.RLock()
        self._stats_cache: tuple[object, tuple[int, float]] | None = None
        self._reader = KeyedReader(None if storage.local else (lambda path: storage.fs.open(path, "rb")))
        self._item_cache: OrderedDict[str, tuple] = OrderedDict()
        self._templates_cache: dict[tuple, list[str]] = {}

    # ---- creating and opening ----------------------------------------------------------
    @classmethod
    def create(cls, root: str | Path, backend: str, seed_items: Iterable[SeedItemRow] = (),
               q_init: float = 0.0, scorer: retrieval.SimilarityScorer | None = None) -> "Lake":
        """Create a lake at ``root`` for ``backend`` and load its seed items as api_templates."""
        if not backend:
            raise LakeError(f"{root}: backend must not be empty")
        storage = Storage(root)
        storage.init_layout()
        meta = {"format": FORMAT_VERSION, "backend": backend, "q_init": float(q_init),
                "created_at": datetime.now(timezone.utc).isoformat()}
        lake = cls(storage, meta, scorer)
        seeds = [NewItem(kind="api_template", backend=backend, title=s.title, body=s.body, code=s.code or "",
                         category=getattr(s, "category", None) or "general") for s in seed_items]
        if seeds:
            lake.add_items(seeds)
        storage.write_meta(meta)  # the commit point: a lake without lake.json does not exist
        return lake

    @classmethod
    def open(cls, root: str | Path, scorer: retrieval.SimilarityScorer | None = None) -> "Lake":
        storage = Storage(root)
        if not storage.exists():
            raise LakeError(f"{root}: no memory lake here (run `evokernel lake init --lake {root} --backend NAME`)")
        return cls(storage, storage.read_meta(), scorer)

    @property
    def root(self) -> str:
        return self.storage.url

    # ---- writing -----------------------------------------------------------------------
    def append(self, table: str, rows: Sequence[Mapping] | pa.Table) -> None:
        """Append one batch (one Parquet file) to a table; rows are validated against its schema."""
        if table in INTERNAL_TABLES:
            raise LakeError(f"{table}: internal table, written by the lake itself")
        data = to_table(table, rows)
        if data.num_rows == 0:
            return
        if table == "items":
            self._append_items(data)
        else:
            self.storage.write_batch_file(table, data, new_batch_id())

    def add_items(self, items: Sequence[NewItem]) -> list[str]:
        """Add memory items (one batch); returns their new item ids in order."""
        fresh = iter(new_item_ids(sum(item.item_id is None for item in items)))
        ids = [item.item_id or next(fresh) for item in items]
        rows = [{**asdict(item), "item_id": item_id} for item, item_id in zip(items, ids)]
        self.append("items", rows)
        return ids

    def _append_items(self, data: pa.Table) -> None:
        texts = data.column("embedding_text").to_pylist()
        if any(t is None for t in texts):
            cols = {n: data.column(n).to_pylist() for n in ("title", "category", "body", "code")}
            filled = [t if t is not None else embedding_text(cols["title"][i], cols["category"][i], cols["body"][i],
                                                             cols["code"][i]) for i, t in enumerate(texts)]
            data = data.set_column(data.schema.get_field_index("embedding_text"), "embedding_text",
                                   pa.array(filled, pa.string()))
        docs, postings = index_rows(data)
        batch = new_batch_id()
        self.storage.write_batch_file("postings", postings, batch)
        self.storage.write_batch_file("docs", docs, batch)
        self.storage.write_batch_file("items", data, batch)  # commit point of the batch

    # ---- reading -----------------------------------------------------------------------
    def connect(self) -> duckdb.DuckDBPyConnection:
        """A new DuckDB connection with the lake's views (items, attempts, ..., item_values)."""
        con = new_connection(self.storage)
        install_views(con, self.storage, self.storage.visible_files(), self.q_init, lake_format=self.format)
        return con

    def _resident(self) -> duckdb.DuckDBPyConnection:
        """The resident connection, its views refreshed if the committed files changed."""
        files = self.storage.visible_files()
        if self._con is None:
            self._con = new_connection(self.storage)
        if files != self._files:
            install_views(self._con, self.storage, files, self.q_init, previous=self._files,
                          lake_format=self.format)
            self._files = files
        return self._con

    def query(self, sql_text: str, params: Sequence | Mapping | None = None) -> pa.Table:
        """Run a DuckDB query over the lake's views; a malformed query is a one-line LakeError."""
        with self._guard:
            con = self._resident()
            try:
                return _arrow(con, sql_text, params)
            except duckdb.IOException:
                self._files = None  # a file vanished under a concurrent compaction: relist once
                con = self._resident()
                return self._run(con, sql_text, params)
            except duckdb.Error as exc:
                raise LakeError(f"query failed: {_first_line(exc)}") from None

    @staticmethod
    def _run(con: duckdb.DuckDBPyConnection, sql_text: str, params) -> pa.Table:
        try:
            return _arrow(con, sql_text, params)
        except duckdb.Error as exc:
            raise LakeError(f"query failed: {_first_line(exc)}") from None

    # ---- values ------------------------------------------------------------------------
    def current_q(self, item_ids: Sequence[str], stage: int) -> dict[str, float]:
        with self._guard:
            return values.current_q(self._resident(), item_ids, stage, self.q_init)

    def update_values(self, updates: Sequence[ValueUpdate]) -> dict[str, float]:
        """Apply Q <- Q + alpha (r - Q) in order under the values lock (see values.py); new Qs."""
        if not updates:
            return {}
        with self.storage.lock("values", exclusive=True), self._guard:
            rows = values.plan_updates(self._resident(), updates, self.q_init)
            self.append("value_updates", rows)
        return {row["item_id"]: row["q_after"] for row in rows}

    def set_values(self, values_by_item: Sequence[tuple[str, int, float]], attempt_id: str | None = None) -> None:
        """Record given Qs as value_updates rows (used by import); same lock and seq rule as updates."""
        if not values_by_item:
            return
        with self.storage.lock("values", exclusive=True), self._guard:
            con = self._resident()
            seq = int(con.execute(sql("max_seq")).fetchall()[0][0])
            before = {stage: values.current_q(con, [i for i, s, _ in values_by_item if s == stage], stage, self.q_init)
                      for stage in (1, 2)}
            rows = [{"item_id": item_id, "stage": stage, "attempt_id": attempt_id, "q_before": before[stage][item_id],
                     "q_after": q, "seq": seq + k + 1} for k, (item_id, stage, q) in enumerate(values_by_item)]
            self.append("value_updates", rows)

    # ---- transfer ----------------------------------------------------------------------
    def export(self, out: str | Path, exclude_tasks: Sequence[str] = (), kinds: Sequence[str] = ()):
        """Export items (minus test tasks / other kinds) with their Qs to one Parquet file."""
        return transfer.export_items(self, out, exclude_tasks, kinds)

    def import_items(self, path: str | Path):
        """Import an export: items keep ids, provenance and Q values; known ids are skipped."""
        return transfer.import_items(self, path)

    # ---- retrieval ---------------------------------------------------------------------
    def retrieve(self, req: RetrievalRequest) -> tuple[RetrievedItem, ...]:
        """Retrieve items for an attempt (see retrieval.py) and record them in ``retrievals``."""
        with self._guard:
            con = self._resident()
            chosen = self._templates(con, req) + self._pool_choices(con, req)
            shown = self._materialise(con, req, chosen)
        self.append("retrievals", [{"attempt_id": req.attempt_id, "item_id": r.item_id, "stage": req.stage,
                                    "rank": r.rank, "similarity": r.similarity, "q_value": r.q_value,
                                    "explored": r.explored, "strategy": r.strategy} for r in shown])
        return shown

    def _templates(self, con, req: RetrievalRequest) -> list[retrieval.Choice]:
        if not retrieval.templates_added(req):
            return []
        key = (tuple(f.path for f in (self._files or {}).get("docs", [])), req.backend)
        if key not in self._templates_cache:
            rows = con.execute(sql("templates"), {"backend": req.backend}).fetchall()
            self._templates_cache = {key: [row[0] for row in rows]}
        excluded = set(req.exclude_item_ids)
        ids = [i for i in self._templates_cache[key] if i not in excluded]
        ids = ids[: req.max_templates] if req.max_templates is not None else ids
        q = values.current_q(con, ids, req.stage, self.q_init)
        return [retrieval.Choice(retrieval.Candidate(i, 0.0, q[i]), False, "template") for i in ids]

    def _pool_choices(self, con, req: RetrievalRequest) -> list[retrieval.Choice]:
        kinds = retrieval.pool_kinds(req, ITEM_KINDS)
        ctx = retrieval.ScoringContext(con, self._files or {}, self.storage.duck_path, self._reader)
        pool = self.scorer.pool(ctx, req, kinds, req.pool_size)
        q = values.current_q(con, [c.item_id for c in pool], req.stage, self.q_init)
        pool = [retrieval.Candidate(c.item_id, c.similarity, q[c.item_id]) for c in pool]
        return retrieval.choose(pool, req)

    def _materialise(self, con, req, chosen: list[retrieval.Choice]) -> tuple[RetrievedItem, ...]:
        ids = [c.candidate.item_id for c in chosen]
        if not ids:
            return ()
        rows = self._item_rows(ids)
        out = []
        for rank, choice in enumerate(c for c in chosen if c.candidate.item_id in rows):
            item_id, kind, title, body, code, task_id, _ = rows[choice.candidate.item_id]
            out.append(RetrievedItem(item_id=item_id, kind=kind, title=title or "", body=body or "", code=code or "",
                                     task_id=task_id, rank=rank, similarity=choice.candidate.similarity,
                                     q_value=choice.candidate.q, explored=choice.explored, strategy=choice.strategy))
        return tuple(out)

    def _item_rows(self, ids: list[str]) -> dict[str, tuple]:
        """The ITEM_COLUMNS rows of the given items (absent ids left out): cache, then pruned reads."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._item_cache]
        for path in [f.path for f in (self._files or {}).get("items", [])] if missing else []:
            table = self._reader.read(path, "item_id", missing, ITEM_COLUMNS)
            for row in zip(*(table.column(c).to_pylist() for c in ITEM_COLUMNS)):
                self._item_cache[row[0]] = row
        out = {}
        for item_id in ids:
            if item_id in self._item_cache:
                self._item_cache.move_to_end(item_id)
                out[item_id] = self._item_cache[item_id]
        while len(self._item_cache) > ITEM_CACHE_SIZE:
            self._item_cache.popitem(last=False)
        return out

    # ---- housekeeping ------------------------------------------------------------------
    def compact(self, min_files: int = 2) -> CompactionResult:
        """Merge small files (see compaction.py); query results are unchanged."""
        with self._guard:
            result = compaction.compact(self.storage, min_files=min_files)
            self._files = None
        return result

    def table_stats(self) -> tuple[TableStats, ...]:
        """Rows, files and bytes per table (the internal docs and postings included)."""
        files = self.storage.visible_files()
        out = []
        for table in files:
            rows = self.query(f"SELECT count(*) AS n FROM {table}").column("n")[0].as_py()  # table: a known name
            out.append(TableStats(table, int(rows), len(files[table]), sum(f.size for f in files[table])))
        return tuple(out)

    def close(self) -> None:
        with self._guard:
            if self._con is not None:
                self._con.close()
            self._con, self._files = None, None

    def __enter__(self) -> "Lake":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _arrow(con: duckdb.DuckDBPyConnection, sql_text: str, params) -> pa.Table:
    relation = con.sql(sql_text, params=params)
    return relation.to_arrow_table() if relation is not None else pa.table({})


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["Lake", "TABLES"]
