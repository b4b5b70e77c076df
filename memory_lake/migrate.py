"""Moving a lake into a new DuckLake lake, every row kept: a lake of the old directory format
(format 1: Parquet batch files under a directory, ``lake.json``, compaction journals), or another
DuckLake lake (e.g. a directory lake moving to a ``ducklake:postgres:`` catalog).

The old layout: ``<old>/lake.json`` (backend, q_init), ``<old>/<table>/part-*.parquet`` (one per
write batch) and ``cpt-*.parquet`` (compaction outputs), ``<old>/_journal/*.json`` (a compaction
cut short: when all its outputs exist its sources are hidden, otherwise its outputs are). Items,
attempts, retrievals, campaigns and llm_calls are copied as they are (ids, provenance, times);
value_updates keep their seq, q_before and q_after, so every current Q is the old one; docs and
postings are rebuilt from the items by the new lake's indexer. The whole copy is the new lake's
creating transaction: the new lake exists only once everything is in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memory_lake.errors import LakeError
from memory_lake.rows import to_table
from memory_lake.schema import TABLES

OLD_META = "lake.json"


@dataclass(frozen=True)
class MigrationResult:
    rows: dict[str, int]  # table -> rows copied
    q_values: int  # (item, stage) pairs with a current Q
    renumbered: bool  # value_updates seqs were not distinct and were renumbered in (seq, time) order


def read_old_meta(old: Path) -> dict:
    try:
        meta = json.loads((old / OLD_META).read_text())
    except FileNotFoundError:
        raise LakeError(f"{old}: not a lake of the old directory format (no {OLD_META})") from None
    except json.JSONDecodeError as exc:
        raise LakeError(f"{old}/{OLD_META}: invalid JSON ({exc})") from None
    if not meta.get("backend"):
        raise LakeError(f"{old}/{OLD_META}: backend: missing")
    return meta


def visible_files(old: Path, table: str) -> list[Path]:
    """The committed batch files of one old table, compaction journals resolved."""
    files = sorted(p for p in (old / table).glob("*.parquet") if p.name.split("-")[0] in ("part", "cpt"))
    hidden: set[Path] = set()
    for journal_path in sorted((old / "_journal").glob("*.json")):
        journal = json.loads(journal_path.read_text())
        outputs = [old / p for p in journal["outputs"]]
        hidden.update(old / p for p in journal["sources"]) if all(p.exists() for p in outputs) else hidden.update(outputs)
    return [p for p in files if p not in hidden]


def read_table(old: Path, table: str) -> pa.Table:
    parts = [to_table(table, pq.read_table(p)) for p in visible_files(old, table)]
    return pa.concat_tables(parts) if parts else TABLES[table].empty_table()


def history(data: pa.Table) -> tuple[pa.Table, bool]:
    """value_updates in seq order; seqs renumbered 1..n (same order) only if they are not distinct."""
    if data.num_rows == 0:
        return data, False
    data = data.sort_by([("seq", "ascending"), ("created_at", "ascending")])
    seqs = data.column("seq")
    if pc.count_distinct(seqs).as_py() == data.num_rows and pc.min(seqs).as_py() > 0:
        return data, False
    return data.set_column(data.schema.get_field_index("seq"), "seq", pa.array(range(1, data.num_rows + 1), pa.int64())), True


def copy_rows(con: duckdb.DuckDBPyConnection, read: Callable[[str], pa.Table], insert,
              insert_items) -> MigrationResult:
    """Insert every row ``read(table)`` gives on ``con`` (inside the new lake's creating transaction)."""
    counts = {}
    for table in ("items", "attempts", "retrievals", "campaigns", "llm_calls"):
        data = read(table)
        counts[table] = data.num_rows
        if data.num_rows:
            insert_items(con, data) if table == "items" else insert(con, table, data)
    updates, renumbered = history(to_table("value_updates", read("value_updates")))
    counts["value_updates"] = updates.num_rows
    if updates.num_rows:
        insert(con, "value_updates", updates)
        con.execute("UPDATE value_clock SET seq = $seq", {"seq": int(pc.max(updates.column("seq")).as_py())})
    pairs = {(i, s) for i, s in zip(updates.column("item_id").to_pylist(), updates.column("stage").to_pylist())}
    return MigrationResult(counts, len(pairs), renumbered)
