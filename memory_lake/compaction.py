"""Compaction: merge each table's small batch files into one sorted file, without changing the
result of any query, safe against a crash at any point.

Protocol (one journal per run, <root>/_journal/<id>.json listing sources and outputs):
1. list the visible files (shared lock) and write each table's merged rows to ``_tmp`` (no lock:
   appends go on meanwhile into new files, which this run does not touch);
2. under the exclusive lake lock: write the journal, rename the temp files to ``cpt-*`` outputs,
   delete the sources, delete the journal.
Readers list files under the shared lock, so they see the state before or after step 2, never a
mix. After a crash inside step 2 a journal remains; readers resolve it (all outputs present:
sources hidden; otherwise outputs hidden) and the next compaction finishes or undoes it
(``recover``). Items, docs and postings are compacted together because a derived file's
visibility depends on its items batch. The same run writes the champion lists of the merged
postings (sql/champions.sql: per term and kind the ``champions_k`` postings of highest BM25 term
weight) as a ``champions`` cpt file with the postings output's batch id, replacing older ones.

Sort order of outputs (for row-group pruning): postings by term; items, docs and value_updates by
item_id; the others by their id column.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Callable

import duckdb

from memory_lake.models import CompactionResult
from memory_lake.schema import ALL_TABLES
from memory_lake.sqlfiles import sql
from memory_lake.storage import DataFile, Storage, new_batch_id, row_group_rows

CHAMPIONS_K = 1_000  # champion postings kept per (term, kind)
BM25_K1, BM25_B = 1.2, 0.75  # the weight champions are ranked by (Bm25Scorer's defaults)

SORT_KEYS = {
    "items": "item_id",
    "docs": "item_id",
    "postings": "term, item_id",
    "value_updates": "item_id, stage, seq",
    "retrievals": "attempt_id, rank",
    "attempts": "attempt_id",
    "campaigns": "campaign_id, recorded_at",
    "llm_calls": "call_id",
}
STALE_SECONDS = 3600.0  # temp and orphan files older than this belong to dead writers
Hook = Callable[[str], None]


def compact(storage: Storage, min_files: int = 2, on_step: Hook | None = None,
            champions_k: int = CHAMPIONS_K) -> CompactionResult:
    """Merge every table that has at least ``min_files`` visible files (items group together)."""
    step = on_step or (lambda _name: None)
    recover(storage)
    files = storage.visible_files()
    chosen = [t for t in ALL_TABLES if len(files[t]) >= min_files and t not in ("docs", "postings")]
    if "items" in chosen:
        chosen += [t for t in ("docs", "postings") if files[t]]
    before = [f for t in chosen for f in files[t]] + (files["champions"] if "postings" in chosen else [])
    if not chosen:
        total = sum(len(v) for v in files.values())
        size = sum(f.size for v in files.values() for f in v)
        return CompactionResult((), total, total, size, size)
    temps = {table: _merge_to_temp(storage, table, files[table]) for table in chosen}
    if "postings" in chosen:
        temps["champions"] = _champions_to_temp(storage, files["postings"], files["docs"], champions_k)
    step("merged")
    outputs = _swap(storage, temps, before, step)
    after = storage.visible_files()
    return CompactionResult(
        tables=tuple(chosen),
        files_before=sum(len(v) for v in files.values()),
        files_after=sum(len(v) for v in after.values()),
        bytes_before=sum(f.size for v in files.values() for f in v),
        bytes_after=sum(f.size for v in after.values() for f in v),
        extra={"outputs": outputs},
    )


def _scratch_connection(storage: Storage) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB that can read the lake's files and need not keep row order."""
    con = duckdb.connect()
    if not storage.local:
        con.register_filesystem(storage.fs)
    con.execute("SET preserve_insertion_order = false")
    return con


def _merge_to_temp(storage: Storage, table: str, sources: list[DataFile]) -> str:
    tmp = storage.temp_path()
    con = _scratch_connection(storage)
    try:
        relation = con.read_parquet([storage.duck_path(f.path) for f in sources], union_by_name=True)
        if table in SORT_KEYS:
            relation = relation.order(SORT_KEYS[table])
        relation.write_parquet(storage.duck_path(tmp), compression="zstd", row_group_size=row_group_rows(table))
    finally:
        con.close()
    return tmp


def _champions_to_temp(storage: Storage, postings: list[DataFile], docs: list[DataFile], k: int) -> str:
    storage.fs.makedirs(storage.path("champions"), exist_ok=True)  # lakes created before champions
    tmp = storage.temp_path()
    con = _scratch_connection(storage)
    try:
        con.read_parquet([storage.duck_path(f.path) for f in postings]).create_view("postings_src")
        con.read_parquet([storage.duck_path(f.path) for f in docs]).create_view("docs_src")
        relation = con.sql(sql("champions"), params={"k": int(k), "k1": BM25_K1, "b": BM25_B})
        relation.write_parquet(storage.duck_path(tmp), compression="zstd", row_group_size=row_group_rows("champions"))
    finally:
        con.close()
    return tmp


def _swap(storage: Storage, temps: dict[str, str], sources: list[DataFile], step: Hook) -> list[str]:
    batch = new_batch_id()
    finals = {table: storage.final_path(table, batch, prefix="cpt") for table in temps}
    journal_path = storage.path("_journal", f"{uuid.uuid4().hex}.json")
    journal = {"outputs": [_rel(storage, p) for p in finals.values()],
               "sources": [_rel(storage, f.path) for f in sources]}
    with storage.lock("lake", exclusive=True):
        storage.write_bytes_atomically(journal_path, json.dumps(journal).encode())
        step("journal")
        for table, tmp in temps.items():
            storage.commit(tmp, finals[table])
            step(f"renamed:{table}")
        for f in sources:
            storage.fs.rm(f.path)
            step("deleted-source")
        storage.fs.rm(journal_path)
    return list(finals.values())


def recover(storage: Storage) -> int:
    """Finish or undo compactions interrupted by a crash; drop stale temp/orphan files."""
    with storage.lock("lake", exclusive=True):
        journals = storage.journals()
        for path, journal in journals:
            outputs = [storage.path(p) for p in journal["outputs"]]
            if all(storage.fs.exists(p) for p in outputs):
                doomed = [storage.path(p) for p in journal["sources"]]
            else:
                doomed = outputs
            for p in doomed:
                if storage.fs.exists(p):
                    storage.fs.rm(p)
            storage.fs.rm(path)
        _drop_stale(storage)
    return len(journals)


def _drop_stale(storage: Storage) -> None:
    cutoff = time.time() - STALE_SECONDS
    for entry in storage.fs.ls(storage.path("_tmp"), detail=True):
        if _mtime(entry) < cutoff:
            storage.fs.rm(entry["name"])
    committed = {f.batch_id for f in storage.list_table("items")}
    for table in ("docs", "postings"):
        for f in storage.list_table(table):
            if f.prefix == "part" and f.batch_id not in committed:
                info = storage.fs.info(f.path)
                if _mtime(info) < cutoff:
                    storage.fs.rm(f.path)


def _mtime(entry: dict) -> float:
    value = entry.get("mtime", entry.get("created", time.time()))
    return value.timestamp() if hasattr(value, "timestamp") else float(value)


def _rel(storage: Storage, path: str) -> str:
    return path[len(storage.root) + 1:]
