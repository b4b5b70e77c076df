"""Where a lake's Parquet files are, and keeping a directory lake self-contained and relocatable.

A directory lake keeps its files in ``<dir>/data/`` and records that data path relative to itself
(``data/``). DuckLake keeps whatever data path it was created with and an absolute one went along with
every copy: after ``cp -a A B`` commands on B wrote into A's files and B's ``--expire-older-than``
deleted files A needed, and a moved lake found no files at all. So every open resolves a directory
lake's data path from the lake's own location and hands it to DuckLake (``DATA_PATH`` with
``OVERRIDE_DATA_PATH``: for that connection only); DuckLake stores every file, table, schema and file
scheduled for deletion relative to the data path, so the copy reads, writes and deletes only its own.

Lakes made before recorded an absolute path. :func:`resolve` migrates one when that is safe:
- the path is the lake's own ``<dir>/data/`` (it is where it was made): recorded as ``data/``;
- another path, and ``<dir>/data/`` holds every file the catalog lists (a copy or a move): likewise;
- otherwise its data lies outside the lake: refused with one line. A catalog whose data lives
  elsewhere says so by its name, ``ducklake:sqlite:<catalog file>`` or ``ducklake:postgres:...``
  (a "shared catalog"): those use the data path they record (a relative one is relative to the
  SQLite catalog's folder).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from memory_lake import engine
from memory_lake.errors import LakeError
from memory_lake.storage import DATA_DIR, Location

RELATIVE = DATA_DIR + "/"  # what a directory lake records


def recorded(catalog_file: Path) -> str | None:
    """The data path a SQLite catalog records (None: no DuckLake in it yet). Read through DuckDB's SQLite,
    never Python's: a second copy of SQLite in a process where DuckDB has the catalog open resets the
    WAL index under DuckDB's mapping (SIGBUS; see memory_lake.readstate)."""
    con = engine.new_connection(("sqlite",))
    try:
        con.execute(f"ATTACH {engine.literal(str(catalog_file))} AS recorded_catalog (TYPE sqlite, READ_ONLY)")
        row = con.execute("SELECT value FROM recorded_catalog.ducklake_metadata WHERE key = 'data_path'").fetchone()
    except duckdb.Error:  # not a SQLite file, or no ducklake_metadata table: not initialised
        return None
    finally:
        con.close()
    return str(row[0]) if row and row[0] is not None else None


def record_relative(catalog_file: Path) -> None:
    """Record ``data/`` as the data path of a directory lake's catalog (idempotent), through DuckDB's
    SQLite as :func:`recorded` reads it. A catalog another process is writing (the campaign that has just
    created the lake, while a query or a progress bar opens it) is left as it is: this open uses the
    lake's own ``data/`` all the same, and a later one records it."""
    con = engine.new_connection(("sqlite",))
    try:
        con.execute(f"ATTACH {engine.literal(str(catalog_file))} AS recorded_catalog (TYPE sqlite)")
        con.execute("UPDATE recorded_catalog.ducklake_metadata SET value = ? WHERE key = 'data_path'", [RELATIVE])
    except duckdb.Error as exc:
        if "locked" not in str(exc).lower():
            raise
    finally:
        con.close()


def own_data_path(location: Location) -> str:
    """A directory lake's data path: ``<dir>/data/``, wherever the directory is now."""
    assert location.directory is not None
    return str(location.directory / DATA_DIR) + "/"


def resolve(location: Location) -> str | None:
    """The data path to open the lake with (None: the one its catalog records); migrates a directory
    lake that recorded an absolute path when that is safe, refuses one whose data lies outside it."""
    if location.kind == "postgres":
        return None
    catalog_file = location.sqlite_catalog
    assert catalog_file is not None
    found = recorded(catalog_file)
    if location.kind == "sqlite":
        if found and not _is_absolute(found):
            return str((catalog_file.parent / found).resolve()) + "/"
        return None
    own = own_data_path(location)
    if found is None or found == RELATIVE:
        return own
    missing = [] if _same_dir(found, own) else _missing(location, own)
    if missing:
        raise LakeError(_outside(location, found, own, missing[0]))
    record_relative(catalog_file)
    return own


def check_new(location: Location, data_path: str | None) -> None:
    """A new directory lake keeps its files inside it: ``--data-path`` elsewhere is refused."""
    if location.kind != "directory" or not data_path:
        return
    if not _same_dir(data_path, own_data_path(location)):
        raise LakeError(f"--data-path {data_path}: a directory lake keeps its files in {own_data_path(location)} "
                        f"(for data elsewhere name the catalog: --lake ducklake:sqlite:{location.sqlite_catalog} "
                        f"--data-path {data_path})")


def _missing(location: Location, own: str) -> list[str]:
    """The catalog's current data files that ``own`` lacks (all of them when it is not there)."""
    if not os.path.isdir(own):
        return [own]
    con = engine.new_connection()
    try:
        engine.attach(con, location.catalog, data_path=own, override_data_path=True, read_only=True)
        tables = [row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = $db",
                                                {"db": engine.ALIAS}).fetchall()]
        files = [row[0] for table in tables for row in con.execute(
            "SELECT data_file FROM ducklake_list_files($db, $table)", {"db": engine.ALIAS, "table": table}).fetchall()]
    except duckdb.Error as exc:
        raise LakeError(f"{location.label}: cannot list the lake's files ({engine.first_line(exc)})") from None
    finally:
        con.close()
    return [f for f in files if not os.path.isfile(f)]


def _outside(location: Location, found: str, own: str, missing: str) -> str:
    where = f"{own} does not exist" if missing == own else f"{own} lacks {missing}"
    return (f"{location.label}: its catalog records the data path {found}, outside the lake, and {where} "
            f"(a directory lake keeps its files in {own}: move them there, or open the catalog with its data "
            f"where it is as --lake ducklake:sqlite:{location.sqlite_catalog})")


def _is_absolute(path: str) -> bool:
    return "://" in path or os.path.isabs(path)


def _same_dir(a: str, b: str) -> bool:
    if "://" in a or "://" in b:
        return a.rstrip("/") == b.rstrip("/")
    return os.path.normpath(os.path.abspath(os.path.expanduser(a))) == os.path.normpath(b)
