"""A lake's catalog: creating its tables, views and options, reading its metadata row, opening it
live or as of a snapshot, and listing its snapshots.

Creation commits the tables and the item_values view, then sets per-table options (DuckLake sets
options only on committed tables), then commits the lake_meta row, the value clock and the seed
items together: that last transaction is the commit point, and a catalog without a lake_meta row
holds no lake (creating it again finishes the job).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import duckdb

from memory_lake import datapath, engine
from memory_lake.errors import LakeError
from memory_lake.schema import (ADDED_TABLES, ALL_TABLES, PARQUET_COMPRESSION, ROW_GROUP_ROWS, column_type,
                                create_table_sql)
from memory_lake.sqlfiles import sql
from memory_lake.storage import CATALOG_FILE, Location, normalise_data_path, parse

FORMAT_VERSION = 2  # 1: Parquet files under a directory (before DuckLake); 2: DuckLake
OLD_META_FILE = "lake.json"  # marks a format-1 lake (see migrate.py)
# Physical sort order of each table's files (applied when DuckLake compacts them), for pruning.
SORT_KEYS = {"items": "item_id", "docs": "item_id", "postings": "term, item_id", "champions": "term, item_id",
             "value_updates": "item_id, stage, seq", "retrievals": "attempt_id, rank", "attempts": "attempt_id",
             "campaigns": "campaign_id, recorded_at", "llm_calls": "call_id"}


@dataclass(frozen=True)
class LakeMeta:
    format: int
    backend: str
    q_init: float
    created_at: datetime


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    time: datetime
    changes: str  # DuckLake's text, tables by internal id ("{tables_inserted_into=[12]}")
    described: str = ""  # the same with table names ("inserted into: attempts")


def attach_live(location: Location, create: bool = False, data_path: str | None = None,
                read_only: bool = False, for_user_sql: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection with the lake attached as ``lake`` (created when ``create``; a directory lake
    with its data path resolved from where it is now: see datapath.py); ``for_user_sql``: see
    engine.new_connection."""
    if not create:
        _check_exists(location)
        data_path = datapath.resolve(location)
    con = engine.new_connection(for_user_sql=for_user_sql)
    try:
        engine.attach(con, location.catalog, data_path=data_path, create=create, read_only=read_only,
                      override_data_path=data_path is not None)
    except duckdb.Error as exc:
        con.close()
        raise LakeError(f"{location.label}: cannot open the lake catalog ({engine.first_line(exc)})") from None
    return con


def attach_as_of(location: Location, as_of: str | int, for_user_sql: bool = False) -> duckdb.DuckDBPyConnection:
    """A read-only connection with the lake as it was at a snapshot id or a timestamp."""
    _check_exists(location)
    snapshot, when = parse_as_of(as_of)
    data_path = datapath.resolve(location)
    con = engine.new_connection(for_user_sql=for_user_sql)
    try:
        engine.attach(con, location.catalog, snapshot=snapshot, snapshot_time=when, data_path=data_path,
                      override_data_path=data_path is not None)
    except duckdb.Error as exc:
        con.close()
        raise LakeError(f"{location.label}: no snapshot at --as-of {as_of} ({engine.first_line(exc)})") from None
    return con


def parse_as_of(as_of: str | int) -> tuple[int | None, str | None]:
    """A snapshot id (an integer) or an ISO timestamp (UTC unless it names a zone)."""
    text = str(as_of).strip()
    if text.isdigit():
        return int(text), None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise LakeError(f"--as-of {text}: expected a snapshot id or a timestamp like 2026-11-23T05:00") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return None, when.isoformat()


def create_lake(location: Location, backend: str, q_init: float, data_path: str | None,
                seed: Callable[[duckdb.DuckDBPyConnection], None]) -> duckdb.DuckDBPyConnection:
    """Create the catalog, its tables and the lake_meta row; ``seed(con)`` runs in the same transaction."""
    _check_new(location)
    datapath.check_new(location, data_path)
    data_path = data_path or location.default_data_path()
    if not data_path:
        raise LakeError(f"{location.label}: a new catalog lake needs a data path (--data-path DIR or "
                        "s3://bucket/prefix, or EVOKERNEL_LAKE_DATA_PATH)")
    if location.directory is not None:
        location.directory.mkdir(parents=True, exist_ok=True)
        _new_wal_catalog(location.directory / CATALOG_FILE)
    con = attach_live(location, create=True, data_path=normalise_data_path(data_path))
    if location.directory is not None:
        datapath.record_relative(location.directory / CATALOG_FILE)  # relocatable: see datapath.py
    if _has_meta(con):
        con.close()
        raise LakeError(f"{location.label}: already exists (a lake is created only once)")
    meta = {"format": FORMAT_VERSION, "backend": backend, "q_init": float(q_init),
            "created_at": datetime.now(timezone.utc)}

    def tables(c: duckdb.DuckDBPyConnection) -> None:
        for table in ALL_TABLES:
            c.execute(create_table_sql(table))
        c.execute("CREATE OR REPLACE VIEW item_values AS " + sql("item_values"))

    def commit_point(c: duckdb.DuckDBPyConnection) -> None:
        c.execute("INSERT INTO value_clock VALUES (0)")
        c.execute("INSERT INTO lake_meta VALUES ($format, $backend, $q_init, $created_at)", meta)
        seed(c)

    try:
        engine.transaction(con, tables)
        _set_table_options(con)  # DuckLake sets options only on committed tables
        engine.transaction(con, commit_point)
    except BaseException:
        con.close()
        raise
    return con


def _new_wal_catalog(path: Path) -> None:
    """An empty SQLite catalog in WAL mode: readers then never block the writer (one machine)."""
    db = sqlite3.connect(path)  # closed before DuckDB opens the file: two SQLite copies must never share it
    try:
        db.execute("PRAGMA journal_mode=WAL")
    finally:
        db.close()


def table_options() -> dict[tuple[str, str], str]:
    """The DuckLake options the lake's tables are written with: (option, table) -> value."""
    # No table is inlined into the catalog: DuckLake's flush of inlined rows (compaction) deletes
    # them from the catalog in the same commit that adds their file, and a reader whose catalog
    # reads straddle that commit saw neither (tested: a lake opened during compaction found no
    # lake_meta row; a Q catch-up could skip value updates the same way). File tables are also
    # read file by file. So every append writes a file and compaction merges them.
    options = {("data_inlining_row_limit", t): "0" for t in ALL_TABLES}
    options.update({("parquet_row_group_size", t): str(rows) for t, rows in ROW_GROUP_ROWS.items()})
    options.update({("parquet_compression", t): codec for t, codec in PARQUET_COMPRESSION.items()})
    return options


def apply_table_options(con: duckdb.DuckDBPyConnection, current: dict[tuple[str, str], str] | None = None
                        ) -> tuple[str, ...]:
    """Set the table options a lake's catalog lacks or holds with another value (a lake made by an
    older version gets the new ones; files written from then on, compaction's included, use them).
    Idempotent: a lake already up to date costs one catalog read (none given ``current``, the options
    read already). Returns "table.option"s set."""
    current = stored_table_options(con) if current is None else current
    changed = [(name, table, value) for (name, table), value in table_options().items()
               if current.get((name, table)) != value]
    # one transaction (one catalog commit, not one per option: a new lake's 27 took 1-2 s), again as a whole
    # if another process sets them too
    statements = _option_statements(changed)
    if statements:
        engine.transaction(con, lambda c: [c.execute(statement).fetchall() for statement in statements])
    return tuple(f"{table}.{name}" for name, table, _ in changed)


def _option_statements(options: list[tuple[str, str, str]]) -> list[str]:
    """(option, table, value)s as DuckLake calls (names and values: constants of this module and schema.py)."""
    return [f"CALL ducklake_set_option('{engine.ALIAS}', '{name}', '{value}', table_name => '{table}')"
            for name, table, value in options]


def stored_table_options(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], str]:
    """The table-scoped options the lake's catalog holds: (option, table) -> value."""
    return {(name, scope_entry.split(".")[-1]): str(value) for name, _, value, scope, scope_entry
            in con.execute(f"FROM {engine.ALIAS}.options()").fetchall() if scope == "TABLE" and scope_entry}


def _present_tables(con: duckdb.DuckDBPyConnection, columns: frozenset[tuple[str, str]] | None = None) -> set[str]:
    """The lake's tables, from its column listing (a table has at least one column; ``columns``: that listing,
    read already): ``duckdb_tables()`` also computes every table's estimated size, 28 ms of a lake's open against
    8 ms for the columns (13 tables, 2026-12-03)."""
    return {table for table, _ in (_present_columns(con) if columns is None else columns)}


def _present_columns(con: duckdb.DuckDBPyConnection) -> frozenset[tuple[str, str]]:
    return frozenset((t, c) for t, c in con.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_catalog = $alias",
        {"alias": engine.ALIAS}).fetchall())


def add_missing_tables(con: duckdb.DuckDBPyConnection, present: frozenset[str] | None = None) -> tuple[str, ...]:
    """Tables added since the lake was created (schema.ADDED_TABLES) are created, empty, with their
    options. Idempotent and safe when several processes open an old lake at once."""
    present = _present_tables(con) if present is None else present
    missing = [t for t in ADDED_TABLES if t not in present]
    if not missing:
        return ()
    engine.transaction(con, lambda c: [c.execute(create_table_sql(t)) for t in missing])
    apply_table_options(con)
    return tuple(missing)


def check_tables(con: duckdb.DuckDBPyConnection, location: Location, present: frozenset[str] | None = None) -> None:
    """Every table of the lake is there; one that is not (dropped, e.g. through an older version's
    `lake query`) is a one-line LakeError naming it and the snapshot to read the lake as it was."""
    present = _present_tables(con) if present is None else present
    missing = [t for t in ALL_TABLES if t not in present]
    if not missing:
        return
    dropped = [s.snapshot_id for s in snapshots(con) if "tables_dropped" in s.changes or "dropped_table" in s.changes]
    before = f"; the lake as it was: `evokernel lake query --lake {location.label} --as-of {dropped[-1] - 1} ...`" \
        if dropped else ""
    raise LakeError(f"{location.label}: table {missing[0]} is missing from the lake's catalog (dropped"
                    f"{f' at snapshot {dropped[-1]}' if dropped else ''}){before}")


def _set_table_options(con: duckdb.DuckDBPyConnection) -> None:
    """A new lake's table options and sort keys, in one catalog commit (a new catalog holds none, so none is
    read first: with apply_table_options' read and a commit of their own they took 0.07 s of a new lake's
    0.28 s; one commit per sort key took ~0.15 s each)."""
    options = [(name, table, value) for (name, table), value in table_options().items()]
    sorted_by = [f"ALTER TABLE {table} SET SORTED BY ({keys})" for table, keys in SORT_KEYS.items()]
    engine.transaction(con, lambda c: [c.execute(statement).fetchall() for statement in
                                       (*_option_statements(options), *sorted_by)])


def add_missing_columns(con: duckdb.DuckDBPyConnection, existing: frozenset[tuple[str, str]] | None = None
                        ) -> tuple[str, ...]:
    """Schema evolution: columns added to the lake's tables since it was created are added to its
    catalog (DuckLake's ALTER TABLE ADD COLUMN: files written before read the column as NULL).
    Idempotent and safe when several processes open an old lake at once. Returns "table.column"s."""
    existing = _present_columns(con) if existing is None else existing
    missing = [(t, f.name) for t, schema in ALL_TABLES.items() for f in schema
               if (t, f.name) not in existing and any(name == t for name, _ in existing)]
    if not missing:
        return ()

    def add(c: duckdb.DuckDBPyConnection) -> None:
        for table, column in missing:  # table and column: known names from schema.py
            c.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {column_type(table, column)}")

    engine.transaction(con, add)
    return tuple(f"{t}.{c}" for t, c in missing)


@dataclass(frozen=True)
class CatalogState:
    """What opening a lake reads of its catalog, read in one transaction: DuckLake loads the catalog for each
    transaction, and the six reads in transactions of their own took ~0.1 s of a 0.15 s open."""

    meta: LakeMeta | None  # None: no lake_meta row (no lake)
    tables: frozenset[str]
    columns: frozenset[tuple[str, str]]
    options: dict[tuple[str, str], str]


def read_state(con: duckdb.DuckDBPyConnection) -> CatalogState:
    def read(c: duckdb.DuckDBPyConnection) -> CatalogState:
        columns = _present_columns(c)
        tables = frozenset(_present_tables(c, columns))
        rows = c.execute(_META_SQL).fetchall() if "lake_meta" in tables else []
        meta = LakeMeta(int(rows[0][0]), str(rows[0][1]), float(rows[0][2]), rows[0][3]) if rows else None
        return CatalogState(meta, tables, columns, stored_table_options(c))

    return engine.transaction(con, read)


def open_checked(con: duckdb.DuckDBPyConnection, location: Location) -> LakeMeta:
    """The lake's metadata row, its catalog brought up to date where an older version made it (tables, columns,
    options added since) and every table there; one catalog read when nothing needs adding."""
    state = read_state(con)
    if state.meta is None:
        raise LakeError(f"{location.label}: no memory lake here (the catalog holds no lake_meta row)")
    if add_missing_tables(con, state.tables):
        state = read_state(con)
    check_tables(con, location, state.tables)
    add_missing_columns(con, state.columns)
    apply_table_options(con, state.options)
    return state.meta


_META_SQL = "SELECT format, backend, q_init, created_at FROM lake_meta LIMIT 1"


def read_meta(con: duckdb.DuckDBPyConnection, location: Location) -> LakeMeta:
    if not _has_meta(con):
        raise LakeError(f"{location.label}: no memory lake here (the catalog holds no lake_meta row)")
    row = con.execute(_META_SQL).fetchall()[0]
    return LakeMeta(int(row[0]), str(row[1]), float(row[2]), row[3])


def snapshots(con: duckdb.DuckDBPyConnection) -> tuple[Snapshot, ...]:
    rows = con.execute(sql("snapshots")).fetchall()
    names = {str(i): str(n) for i, n in con.execute(sql("table_names").format(metadata=engine.METADATA)).fetchall()}
    return tuple(Snapshot(int(i), t, str(c or ""), describe_changes(m or {}, names)) for i, t, c, m in rows)


def describe_changes(changes: dict, names: dict[str, str]) -> str:
    """A snapshot's changes in words, tables by name: "inserted into: attempts, retrievals; deleted
    from: items" (DuckLake gives most of them by internal table id)."""
    parts = []
    for kind, targets in changes.items():
        what = kind[len("tables_"):] if kind.startswith("tables_") else kind
        shown = [names.get(str(t), str(t)).removeprefix("main.") for t in targets or ()]
        parts.append(f"{what.replace('_', ' ')}: {', '.join(shown)}" if shown else what.replace("_", " "))
    return "; ".join(parts)


def exists(location: Location) -> bool:
    """Whether a lake (a committed lake_meta row) is at ``location``."""
    if location.catalog_exists() is False:
        return False
    try:
        con = attach_live(location)
    except LakeError:
        return False
    try:
        return _has_meta(con)
    finally:
        con.close()


def _has_meta(con: duckdb.DuckDBPyConnection) -> bool:
    return "lake_meta" in _present_tables(con) and bool(con.execute("SELECT count(*) FROM lake_meta").fetchall()[0][0])


def _check_exists(location: Location) -> None:
    if location.catalog_exists() is False:
        if location.directory is not None and (location.directory / OLD_META_FILE).exists():
            raise LakeError(f"{location.label}: a lake of the old directory format; move it into a DuckLake lake "
                            f"with `evokernel lake migrate {location.label} NEW`")
        raise LakeError(f"{location.label}: no memory lake here (run `evokernel lake init --lake {location.label} "
                        "--backend NAME`)")


def _check_new(location: Location) -> None:
    directory = location.directory
    if location.catalog_exists():
        raise LakeError(f"{location.label}: already exists (a lake is created only once)")
    if directory is not None and directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise LakeError(f"{location.label}: already exists and is not empty (a lake is created only once)")
    if location.kind == "sqlite":
        Path(location.catalog[len("ducklake:sqlite:"):]).parent.mkdir(parents=True, exist_ok=True)


def attach_script(uri: str) -> str:
    """The SQL that opens the lake at ``uri`` in plain DuckDB, read-only (values are written by the
    lake's own clock transactions: write through memory_lake)."""
    location = parse(uri)
    own = f", DATA_PATH {engine.literal(datapath.own_data_path(location))}, OVERRIDE_DATA_PATH true" \
        if location.directory is not None else ""
    needs = ("ducklake", "postgres" if location.kind == "postgres" else "sqlite", "httpfs")
    lines = ["-- DuckDB 1.5.5. Extensions from the duckdb-extension-* wheels (where DuckDB can download,",
             "-- INSTALL ducklake; INSTALL sqlite; INSTALL postgres; INSTALL httpfs; does the same):"]
    lines += [f"LOAD '{engine.extension_path(engine.EXTENSIONS[name])}';" for name in needs]
    lines += ["-- data on S3: CREATE SECRET (TYPE s3, KEY_ID '...', SECRET '...', ENDPOINT 'host:port', URL_STYLE 'path');",
              f"ATTACH {engine.literal(location.catalog)} AS lake (READ_ONLY{own});", "USE lake;",
              "-- e.g. SELECT kind, count(*) FROM items GROUP BY kind;  SELECT * FROM lake.snapshots();"]
    return "\n".join(lines)
