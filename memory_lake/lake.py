"""The Lake: the one object callers use to write, read, retrieve from and value the memory.

A lake is a DuckLake (Parquet data files plus a SQLite or PostgreSQL catalog; see storage.py for
the URIs). A Lake holds one DuckDB connection with the lake attached as ``lake`` (and made the
default catalog, so plain table names work), guarded by a thread lock; ``connect()`` gives a
private one, optionally as of a snapshot. Every write is one DuckLake transaction (an items
batch together with its docs and postings rows), retried when the catalog reports a conflict.

Retrieval reads posting lists and shown items with row-group-pruned keyed reads of the data
files of the latest snapshot (readstate.py, keyed_reads.py); item rows never change, so the last
ITEM_CACHE_SIZE shown items are cached, current Qs are cached and caught up by seq (values.py),
and the api_template list is cached per docs file.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import duckdb
import pyarrow as pa

from memory_lake import campaign_lock, catalog, engine, maintenance, migrate, retrieval, transfer, values
from memory_lake.campaign_lock import CampaignLease
from memory_lake.errors import LakeError
from memory_lake.keyed_reads import KeyedReader
from memory_lake.migrate import MigrationResult
from memory_lake.models import (CompactionResult, NewItem, RetrievalRequest, RetrievedItem, SeedItemRow,
                                TableStats, ValueUpdate)
from memory_lake.reads import LakeReads
from memory_lake.readstate import FileState, Files
from memory_lake.rows import to_table
from memory_lake.schema import INTERNAL_TABLES, ITEM_KINDS, TABLES
from memory_lake.storage import Location, parse
from memory_lake.text import embedding_text, index_rows

ITEM_CACHE_SIZE = 4096
# Decoded posting row groups kept in memory: the query terms of a campaign's tasks recur, so most
# retrievals read no Parquet page at all (about 250 KB per 4,096-posting group: ~260 groups).
POSTINGS_CACHE_BYTES = 64 * 2**20
ITEM_COLUMNS = ("item_id", "kind", "title", "body", "code", "task_id", "created_at", "category", "feasible", "speedup",
                "source_attempt_id")
TEMPLATE_COLUMNS = ("item_id", "kind", "backend")


def new_item_ids(count: int) -> list[str]:
    """Time-ordered ids: sorting by item_id is creation order (seed templates keep their order)."""
    base, salt = time.time_ns(), uuid.uuid4().hex[:12]
    return [f"it-{base + i:016x}-{salt}" for i in range(count)]


class Lake(LakeReads):
    def __init__(self, location: Location, con: duckdb.DuckDBPyConnection, meta: catalog.LakeMeta,
                 scorer: retrieval.SimilarityScorer | None = None) -> None:
        self.location = location
        self.meta = meta
        self.q_init = meta.q_init
        self.backend = meta.backend
        self.scorer = scorer or retrieval.Bm25Scorer()
        self._con = con
        self._scratch = engine.new_connection(("httpfs",))  # computing over files and Arrow tables
        self._scratch.execute("SET threads = 1")  # small queries: a second thread costs more than it gives
        engine.install_s3_secret(self._scratch)
        self._guard = threading.RLock()
        self._state = FileState(location)
        self._q = values.QCache(self.q_init)
        self._reader = KeyedReader(cache_bytes=POSTINGS_CACHE_BYTES)
        self._item_cache: OrderedDict[str, tuple] = OrderedDict()
        self._templates_by_file: dict[str, list[tuple[str, str]]] = {}

    # ---- creating and opening ----------------------------------------------------------
    @classmethod
    def create(cls, uri: str | Path, backend: str, seed_items: Iterable[SeedItemRow] = (), q_init: float = 0.0,
               scorer: retrieval.SimilarityScorer | None = None, data_path: str | None = None) -> "Lake":
        """Create a lake at ``uri`` for ``backend`` with its seed items as api_templates (one transaction)."""
        if not backend:
            raise LakeError(f"{uri}: backend must not be empty")
        location = parse(uri)
        seeds = [NewItem(kind="api_template", backend=backend, title=s.title, body=s.body, code=s.code or "",
                         category=getattr(s, "category", None) or "general") for s in seed_items]
        rows = _item_rows(seeds, new_item_ids(len(seeds)))
        con = catalog.create_lake(location, backend, q_init, data_path,
                                  lambda c: _insert_items(c, to_table("items", rows)) if rows else None)
        return cls(location, con, catalog.read_meta(con, location), scorer)

    @classmethod
    def open(cls, uri: str | Path, scorer: retrieval.SimilarityScorer | None = None) -> "Lake":
        location = parse(uri)
        con = catalog.attach_live(location)
        try:
            meta = catalog.open_checked(con, location)
        except BaseException:
            con.close()
            raise
        return cls(location, con, meta, scorer)

    @classmethod
    def open_existing(cls, uri: str | Path, scorer: retrieval.SimilarityScorer | None = None) -> "Lake | None":
        """The lake at ``uri``, opened, or None where there is none (one catalog attach where ``exists`` then
        ``open`` took two); a lake there that cannot be opened raises as ``open`` does."""
        try:
            return cls.open(uri, scorer) if parse(uri).catalog_exists() is not False else None
        except LakeError:
            if cls.exists(uri):
                raise
            return None

    @classmethod
    def open_or_create(cls, uri: str | Path, backend: str, seed_items: Iterable[SeedItemRow] = (),
                       q_init: float = 0.0, data_path: str | None = None) -> "Lake":
        """Open the lake at ``uri``, or create it (first use) seeded with the backend's templates."""
        if (lake := cls.open_existing(uri)) is not None:
            return lake
        try:
            return cls.create(uri, backend, seed_items, q_init=q_init, data_path=data_path)
        except LakeError:
            if cls.exists(uri):  # another process created it first
                return cls.open(uri)
            raise

    @classmethod
    def migrate(cls, old: str | Path, uri: str | Path, data_path: str | None = None) -> tuple["Lake", MigrationResult]:
        """Copy the lake at ``old`` (old directory format, or any lake) into a new lake at ``uri``."""
        if (Path(str(old)) / migrate.OLD_META).is_file():
            meta = migrate.read_old_meta(Path(str(old)))
            backend, q_init = str(meta["backend"]), float(meta.get("q_init", 0.0))
            read = partial(migrate.read_table, Path(str(old)))
        else:
            source = cls.open(old)
            backend, q_init = source.backend, source.q_init
            read = lambda table: source.query(f"SELECT * FROM {table}")  # noqa: E731  (table: a known name)
        done: list[MigrationResult] = []
        location = parse(uri)
        con = catalog.create_lake(location, backend, q_init, data_path,
                                  lambda c: done.append(migrate.copy_rows(c, read, _insert, _insert_items)))
        return cls(location, con, catalog.read_meta(con, location)), done[-1]

    @staticmethod
    def exists(uri: str | Path) -> bool:
        return catalog.exists(parse(uri))

    @property
    def root(self) -> str:
        return self.location.uri

    # ---- writing -----------------------------------------------------------------------
    def append(self, table: str, rows: Sequence[Mapping] | pa.Table) -> None:
        """Append one batch to a table in one transaction; rows are validated against its schema.
        value_updates rows must carry seqs above the lake's last one (see values.append_history)."""
        if table in INTERNAL_TABLES:
            raise LakeError(f"{table}: internal table, written by the lake itself")
        data = to_table(table, rows)
        if data.num_rows == 0:
            return
        with self._guard:
            if table == "items":
                engine.transaction(self._con, lambda c: _insert_items(c, data))
            elif table == "value_updates":
                values.append_history(self._con, data)
            else:
                engine.transaction(self._con, lambda c: _insert(c, table, data))

    def add_items(self, items: Sequence[NewItem]) -> list[str]:
        """Add memory items (one transaction); returns their new item ids in order."""
        fresh = iter(new_item_ids(sum(item.item_id is None for item in items)))
        ids = [item.item_id or next(fresh) for item in items]
        self.append("items", _item_rows(items, ids))
        return ids

    # ---- reading -----------------------------------------------------------------------
    def connect(self, as_of: str | int | None = None) -> duckdb.DuckDBPyConnection:
        """A new DuckDB connection with the lake attached (``items``, ..., ``item_values`` resolve);
        with ``as_of`` (a snapshot id or a timestamp), read-only and as the lake was then."""
        if as_of is not None:
            return catalog.attach_as_of(self.location, as_of)
        return catalog.attach_live(self.location)

    def query(self, sql_text: str, params: Sequence | Mapping | None = None,
              as_of: str | int | None = None) -> pa.Table:
        """Run SQL over the lake (as of a snapshot when asked); a bad query is a one-line LakeError."""
        if as_of is not None:
            con = self.connect(as_of)
            try:
                return engine.arrow(con, sql_text, params)
            finally:
                con.close()
        with self._guard:
            return engine.read_retrying(lambda: engine.arrow(self._con, sql_text, params), self._con)

    def snapshots(self) -> tuple[catalog.Snapshot, ...]:
        with self._guard:
            return catalog.snapshots(self._con)

    # ---- values ------------------------------------------------------------------------
    def current_q(self, item_ids: Sequence[str], stage: int, default: float | None = None) -> dict[str, float]:
        """Current Qs; items never updated at this stage get ``default`` (None: the lake's q_init)."""
        with self._guard:
            self._refresh()
            return self._q.get(item_ids, stage, default)

    def update_values(self, updates: Sequence[ValueUpdate]) -> dict[str, float]:
        """Apply Q <- Q + alpha (r - Q) in order, exactly under concurrency (see values.py); new Qs."""
        if not updates:
            return {}
        with self._guard:
            rows = values.apply_updates(self._con, updates, self.q_init)
        return {row["item_id"]: row["q_after"] for row in rows}

    def set_values(self, values_by_item: Sequence[tuple[str, int, float]], attempt_id: str | None = None) -> None:
        """Record given Qs as value_updates rows (import, migration); same clock rule as updates."""
        if values_by_item:
            with self._guard:
                values.set_values(self._con, values_by_item, attempt_id, self.q_init)

    # ---- transfer ----------------------------------------------------------------------
    def export(self, out: str | Path, exclude_tasks: Sequence[str] = (), kinds: Sequence[str] = ()):
        """Export items (minus test tasks / other kinds) with their Qs to one Parquet file."""
        return transfer.export_items(self, out, exclude_tasks, kinds)

    def import_items(self, path: str | Path):
        """Import an export: items keep ids, provenance and Q values; known ids are skipped."""
        return transfer.import_items(self, path)

    # ---- retrieval ---------------------------------------------------------------------
    def retrieve(self, req: RetrievalRequest, record: bool = True) -> tuple[RetrievedItem, ...]:
        """Retrieve items for an attempt (see retrieval.py) and record them in ``retrievals``."""
        with self._guard:
            files = self._refresh()
            chosen = self._templates(files, req) + self._pool_choices(files, req)
            shown = self._materialise(files, chosen)
        if record:
            self.append("retrievals", [{"attempt_id": req.attempt_id, "item_id": r.item_id, "stage": req.stage,
                                        "rank": r.rank, "similarity": r.similarity, "q_value": r.q_value,
                                        "explored": r.explored, "strategy": r.strategy} for r in shown])
        return shown

    def template_items(self, backend: str) -> tuple[RetrievedItem, ...]:
        """The backend's api_template items with their text, in load order (from retrieval's caches)."""
        with self._guard:
            files = self._refresh()
            probe = RetrievalRequest(attempt_id="", task_id=None, task_text="", category=None, backend=backend,
                                     stage=1, n=0)
            return self._materialise(files, self._templates(files, probe))

    def _refresh(self) -> Files:
        """The data files of the latest snapshot; current Qs caught up if value_updates changed."""
        files = engine.read_retrying(lambda: self._state.refresh(self._con), self._con)
        if self._state.values_changed:
            engine.read_retrying(lambda: self._q.catch_up(self._con), self._con)
            self._state.values_changed = False
        return files

    def _templates(self, files: Files, req: RetrievalRequest) -> list[retrieval.Choice]:
        if not retrieval.templates_added(req):
            return []
        for path in files.paths("docs"):
            if path not in self._templates_by_file:
                table = self._reader.read(path, "kind", ["api_template"], TEMPLATE_COLUMNS)
                self._templates_by_file[path] = list(zip(table.column("item_id").to_pylist(),
                                                         table.column("backend").to_pylist()))
        current = files.paths("docs")
        self._templates_by_file = {p: self._templates_by_file[p] for p in current}
        excluded = set(req.exclude_item_ids)
        ids = sorted(i for p in current for i, b in self._templates_by_file[p] if b == req.backend and i not in excluded)
        ids = ids[: req.max_templates] if req.max_templates is not None else ids
        q = self._q.get(ids, req.stage, req.q_prior)
        return [retrieval.Choice(retrieval.Candidate(i, 0.0, q[i]), False, "template") for i in ids]

    def _pool_choices(self, files: Files, req: RetrievalRequest) -> list[retrieval.Choice]:
        kinds = retrieval.pool_kinds(req, ITEM_KINDS)
        ctx = retrieval.ScoringContext(self._con, files, self._reader, self._scratch)
        pool = self.scorer.pool(ctx, req, kinds, req.pool_size * req.overfetch)
        q = self._q.get([c.item_id for c in pool], req.stage, math.nan)  # nan: never updated at the stage
        prior = self._q.q_init if req.q_prior is None else req.q_prior
        untried = {i for i, v in q.items() if math.isnan(v)}
        pool = [retrieval.Candidate(c.item_id, c.similarity, prior if c.item_id in untried else q[c.item_id])
                for c in pool]
        facts = None
        if retrieval.filters(req):  # the request's relevance rules read each pool item's facts
            rows = self._item_rows(files, [c.item_id for c in pool])
            facts = {i: retrieval.ItemFacts(r[1], r[7], r[8], r[9], r[5]) for i, r in rows.items()}
        return retrieval.select(pool, req, facts, untried)

    def _materialise(self, files: Files, chosen: list[retrieval.Choice]) -> tuple[RetrievedItem, ...]:
        ids = [c.candidate.item_id for c in chosen]
        if not ids:
            return ()
        rows = self._item_rows(files, ids)
        out = []
        for rank, choice in enumerate(c for c in chosen if c.candidate.item_id in rows):
            row = rows[choice.candidate.item_id]
            item_id, kind, title, body, code, task_id = row[:6]
            out.append(RetrievedItem(item_id=item_id, kind=kind, title=title or "", body=body or "", code=code or "",
                                     task_id=task_id, rank=rank, similarity=choice.candidate.similarity,
                                     q_value=choice.candidate.q, explored=choice.explored, strategy=choice.strategy,
                                     feasible=row[8], source_attempt_id=row[10]))
        return tuple(out)

    def _item_rows(self, files: Files, ids: list[str]) -> dict[str, tuple]:
        """The ITEM_COLUMNS rows of the given items (absent ids left out): cache, then pruned reads."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._item_cache]
        for path in files.paths("items") if missing else []:
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

    # ---- one writer per campaign --------------------------------------------------------
    def hold_campaign(self, campaign_id: str) -> CampaignLease:
        """Take the campaign id's lease for this process (released on exit of the ``with`` block);
        another live holder is a one-line CampaignRunning (see campaign_lock.py)."""
        return campaign_lock.hold(self.location, campaign_id)

    # ---- housekeeping ------------------------------------------------------------------
    def files(self) -> Files:
        """The data files retrieval reads at the latest snapshot (items, docs, postings, champions)."""
        with self._guard:
            return self._refresh()

    def compact(self, expire_older_than: float | None = None, champions_k: int | None = None) -> CompactionResult:
        """DuckLake maintenance (see maintenance.py); safe while others write; results unchanged."""
        with self._guard:
            return maintenance.compact(self._con, expire_older_than, champions_k)

    def table_stats(self) -> tuple[TableStats, ...]:
        """Rows, data files and bytes per table (the internal ones included)."""
        with self._guard:
            return maintenance.table_stats(self._con)

    def close(self) -> None:
        with self._guard:
            if self._con is not None:
                self._con.close()
                self._scratch.close()
                self._state.close()
            self._con = None

    def __enter__(self) -> "Lake":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _item_rows(items: Sequence[NewItem], ids: Sequence[str]) -> list[dict]:
    return [{**asdict(item), "item_id": item_id} for item, item_id in zip(items, ids)]


def _insert(con: duckdb.DuckDBPyConnection, table: str, data: pa.Table) -> None:
    name = f"_rows_{table}"
    con.register(name, data)
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {name}")  # table: a known lake table
    finally:
        con.unregister(name)


def _insert_items(con: duckdb.DuckDBPyConnection, data: pa.Table) -> None:
    """Items with their embedding text, docs and postings rows (postings sorted by term)."""
    texts = data.column("embedding_text").to_pylist()
    if any(t is None for t in texts):
        cols = {n: data.column(n).to_pylist() for n in ("title", "category", "body", "code")}
        filled = [t if t is not None else embedding_text(cols["title"][i], cols["category"][i], cols["body"][i],
                                                         cols["code"][i]) for i, t in enumerate(texts)]
        data = data.set_column(data.schema.get_field_index("embedding_text"), "embedding_text",
                               pa.array(filled, pa.string()))
    docs, postings = index_rows(data)
    _insert(con, "items", data.sort_by("item_id"))
    _insert(con, "docs", docs.sort_by("item_id"))
    _insert(con, "postings", postings)


__all__ = ["Lake", "TABLES"]
