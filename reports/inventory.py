"""What the lake holds before any metric runs: the views present, rows per table, and what is
missing for which part of the report. Absent views are replaced by empty ones of the lake's
schema (on the report's own connection) so every query runs on an empty or partial lake.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from memory_lake.schema import TABLES
from reports.sql_files import query

# What each table feeds, for the "missing" notes of an empty or partial lake.
FEEDS = {
    "attempts": "metrics at all (compile rate, correctness, speedups, cost, learning curves)",
    "campaigns": "campaign labels (method, model, backend) or budgets",
    "retrievals": "Q trajectories of the most retrieved items or provenance of first solves",
    "value_updates": "Q-value trajectories",
    "items": "item titles in Q trajectories and provenance",
    "llm_calls": "cost of LLM calls outside attempts (fine if no distillation ran)",
}


@dataclass(frozen=True)
class LakeInventory:
    rows: dict[str, int]  # table -> row count (0 when absent)
    absent: tuple[str, ...]  # tables with no view on the connection

    @property
    def missing(self) -> tuple[str, ...]:
        """One line per absent or empty table, naming what the report lacks because of it."""
        notes = []
        for table, feeds in FEEDS.items():
            if table in self.absent:
                notes.append(f"{table}: table absent from the lake, so the report has no {feeds}")
            elif self.rows.get(table, 0) == 0:
                notes.append(f"{table}: no rows, so the report has no {feeds}")
        return tuple(notes)


def _existing_relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    return set(query(con, "relations")["name"].to_list())


def ensure_views(con: duckdb.DuckDBPyConnection) -> tuple[str, ...]:
    """Register an empty relation of the lake's schema for every absent table; return their names."""
    existing = _existing_relations(con)
    absent = tuple(table for table in TABLES if table not in existing)
    for table in absent:
        con.register(table, pa.table({f.name: pa.array([], f.type) for f in TABLES[table]}))
    return absent


def inspect_lake(con: duckdb.DuckDBPyConnection) -> LakeInventory:
    """Count rows per table (after making absent tables empty views)."""
    absent = ensure_views(con)
    counts = query(con, "table_counts")
    return LakeInventory(rows=dict(zip(counts["table_name"], counts["n_rows"])), absent=absent)
