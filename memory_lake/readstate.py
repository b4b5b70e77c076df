"""What retrieval reads, pinned to a catalog snapshot: the data files of the tables it reads file by
file (items, docs, postings, champions) and the postings files the champion lists cover.

Listing files costs catalog round trips, so the list is refreshed only when a snapshot committed
since the last look touched one of those tables: one small query on DuckLake's own
``ducklake_snapshot_changes`` catalog table tells. All lists come from one transaction, so they
belong to one snapshot (an items batch and its postings appear together).

That query runs on every retrieval. Through DuckDB's attached SQLite catalog it costs ~6.7 ms
(the scanner's per-query set-up; measured at 1M items), and through its PostgreSQL scanner ~3.8 ms
on loopback. A PostgreSQL catalog's feed is read directly, with psycopg on its own autocommit
connection (libpq, the lake's own conninfo; ~0.3 ms). A SQLite catalog's goes through DuckDB: read
with Python's sqlite3 (~1 ms), a second copy of SQLite in the process opened the catalog DuckDB's
copy has open, and two copies do not see each other's locks (POSIX locks are per process): opening
the WAL index (``catalog.sqlite-shm``), a copy that finds it unlocked resets it by truncating it, under
the other copy's mapping, whose next access is a SIGBUS (SQLite's documented hazard of two copies in
one process). A demo campaign here died of SIGBUS once in three runs, with nothing else mapped that
could shrink. The file lists themselves come through DuckDB.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import psycopg

from memory_lake.engine import ALIAS, METADATA
from memory_lake.errors import LakeError
from memory_lake.schema import FILE_TABLES
from memory_lake.sqlfiles import sql
from memory_lake.storage import Location

_CHANGE = re.compile(r"(\w+):(\d+)")


@dataclass(frozen=True, order=True)
class DataFile:
    path: str  # as DuckLake lists it: an absolute local path or an s3:// URL
    size: int


@dataclass(frozen=True)
class Files:
    """Data files per file table at one snapshot, and the postings files the champions cover."""

    snapshot: int = -1
    tables: dict[str, tuple[DataFile, ...]] = field(default_factory=dict)
    covered: frozenset[str] = frozenset()

    def paths(self, table: str) -> list[str]:
        return [f.path for f in self.tables.get(table, ())]


class FileState:
    """The current ``Files`` of one lake connection, refreshed when a snapshot touched them.
    With its ``location``, new snapshots are read from the catalog directly (see the module doc)."""

    def __init__(self, location: Location | None = None) -> None:
        self.files = Files()
        self._table_ids: dict[str, str] | None = None
        self.values_changed = True  # whether value_updates changed since the last refresh
        self._feed: PostgresChanges | None = None
        if location is not None and location.kind == "postgres":
            self._feed = PostgresChanges(location.catalog[len("ducklake:postgres:"):])

    def changes_since(self, con: duckdb.DuckDBPyConnection, snapshot: int) -> list[tuple[str, int]]:
        """(changes_made, snapshot_id) of the snapshots committed after ``snapshot``."""
        if self._feed is not None:
            return self._feed.since(snapshot)
        return con.execute(sql("snapshot_changes").replace("{metadata}", METADATA), {"snapshot": snapshot}).fetchall()

    def close(self) -> None:
        if isinstance(self._feed, PostgresChanges):
            self._feed.close()

    def refresh(self, con: duckdb.DuckDBPyConnection) -> Files:
        if self._table_ids is None:
            rows = con.execute(f"SELECT table_name, table_id FROM {METADATA}.ducklake_table "
                               "WHERE end_snapshot IS NULL").fetchall()
            self._table_ids = {str(table_id): name for name, table_id in rows}
        changes = self.changes_since(con, self.files.snapshot)
        if not changes:
            return self.files
        touched = {self._table_ids.get(table_id, "?") for text, _ in changes for _, table_id in
                   _CHANGE.findall(text or "")}
        self.values_changed = self.values_changed or "value_updates" in touched
        latest = max(snapshot for _, snapshot in changes)
        if self.files.snapshot < 0 or touched & (set(FILE_TABLES) | {"champion_sources", "?"}):
            self.files = list_files(con)
        else:
            self.files = Files(latest, self.files.tables, self.files.covered)
        return self.files


def list_files(con: duckdb.DuckDBPyConnection) -> Files:
    """Every file table's data files and the champions' sources, read in one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        snapshot = int(con.execute(f"SELECT * FROM ducklake_current_snapshot('{ALIAS}')").fetchall()[0][0])
        tables = {}
        for table in FILE_TABLES:
            rows = con.execute(f"SELECT data_file, data_file_size_bytes FROM ducklake_list_files('{ALIAS}', "
                               f"'{table}')").fetchall()
            tables[table] = tuple(sorted(DataFile(path, int(size or 0)) for path, size in rows))
        covered = frozenset(row[0] for row in con.execute("SELECT data_file FROM champion_sources").fetchall())
    finally:
        con.execute("COMMIT")
    return Files(snapshot, tables, covered)


class PostgresChanges:
    """``ducklake_snapshot_changes`` of a PostgreSQL catalog through psycopg (libpq, so the conninfo
    and the PG* environment mean what they mean to DuckDB's scanner): one autocommit connection,
    opened on first use and once more after it broke; each query sees the latest commit."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._db: psycopg.Connection | None = None
        self._lock = threading.Lock()
        self._query = sql("snapshot_changes").replace("{metadata}", "public").replace("$snapshot", "%(snapshot)s")

    def since(self, snapshot: int) -> list[tuple[str, int]]:
        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._db is None or self._db.closed:
                        self._db = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10)
                    return self._db.execute(self._query, {"snapshot": snapshot}).fetchall()
                except psycopg.OperationalError as exc:
                    self._close()
                    if attempt == 2:
                        raise LakeError(f"lake catalog: cannot read its snapshots ({str(exc).strip().splitlines()[0]})") from None
        return []

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
