"""Read-only SQL over a lake (`evokernel lake query`): users read the memory; nothing they type changes it.

Two layers, each decided by DuckDB itself rather than by looking at the text:

1. The statement is parsed (``duckdb.extract_statements``, then ``json_serialize_sql`` for its tree):
   exactly one statement, a SELECT (FROM-first, VALUES, WITH, DESCRIBE, SHOW and SUMMARIZE are
   SELECTs) or EXPLAIN of one. Every table function in the tree must be one that reads only the lake
   or computes (``READ_TABLE_FUNCTIONS``): the file readers (read_csv, read_parquet, glob, ...), the
   catalog scanners that run their own SQL (postgres_query, sqlite_query, ...), ``query()`` and
   DuckLake's maintenance functions are not; nor are the few scalar functions that act on the
   database (``ACTING_FUNCTIONS``). A refusal is one :class:`QueryRefused` line naming what it refused.
2. The connection it runs on can only read: the lake attached READ_ONLY (DuckLake then refuses every
   write to its tables and to its catalog, its maintenance calls included), external access off
   with only the lake's data path allowed (no COPY, ATTACH, file reads or extension loads
   elsewhere), and its configuration locked so the statement cannot lift either. Its extensions were
   loaded with DuckDB's signature check on (engine.new_connection's ``for_user_sql``).

Maintenance has its own commands (`lake compact`, `lake migrate`, `lake import`).
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping, Sequence

import duckdb
import pyarrow as pa

from memory_lake import catalog, datapath, engine
from memory_lake.errors import LakeError
from memory_lake.storage import Location

HINTS = {
    "COPY": "write a result with --format csv|json|parquet --out FILE",
    "EXPORT": "write a result with --format csv|json|parquet --out FILE; copy a lake with `evokernel lake migrate`",
    "ATTACH": "open another lake with its own --lake",
    "CALL": "maintenance: `evokernel lake compact`",
    "PRAGMA": "e.g. SELECT * FROM pragma_table_info('attempts')",
    "INSERT": "lake query only reads; the lake is written by campaigns, `lake import` and `lake migrate`",
}
READ_ONLY_HINT = "lake query only reads: one SELECT"
# Table functions that read only the lake's tables and catalog, DuckDB's own metadata, or compute.
READ_TABLE_FUNCTIONS = frozenset({
    "range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree", "histogram",
    "histogram_values", "summary", "icu_calendar_names", "pg_timezone_names",
    "duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_dependencies", "duckdb_functions",
    "duckdb_indexes", "duckdb_keywords", "duckdb_schemas", "duckdb_sequences", "duckdb_settings",
    "duckdb_tables", "duckdb_types", "duckdb_views", "duckdb_memory", "duckdb_optimizers",
    "pragma_table_info", "pragma_show", "pragma_version", "pragma_platform", "pragma_database_size",
    "pragma_storage_info", "pragma_metadata_info", "pragma_collations",
    "ducklake_snapshots", "ducklake_table_info", "ducklake_list_files", "ducklake_table_changes",
    "ducklake_table_insertions", "ducklake_table_deletions", "ducklake_current_snapshot",
    "ducklake_last_committed_snapshot", "ducklake_options", "ducklake_settings",
    # the same, called on the lake (lake.snapshots(), lake.table_info(), ...)
    "snapshots", "table_info", "list_files", "table_changes", "table_insertions", "table_deletions",
    "current_snapshot", "last_committed_snapshot", "options", "settings",
})
# Scalar functions that act (checkpoints, profiling, logging, keys, running serialized plans).
ACTING_FUNCTIONS = frozenset({
    "json_execute_serialized_sql", "force_checkpoint", "enable_checkpoint_on_shutdown",
    "disable_checkpoint_on_shutdown", "enable_profile", "disable_profile", "write_log", "add_parquet_key",
})
EXPLAIN_WORDS = ("explain", "analyze", "analyse")


class QueryRefused(LakeError):
    """A statement `lake query` does not run (one line: what was refused and why)."""


def query(location: Location, sql_text: str, params: Sequence | Mapping | None = None,
          as_of: str | int | None = None) -> pa.Table:
    """Run one read-only statement over the lake (as of a snapshot when asked); see the module doc."""
    check_statement(sql_text)
    con = connect(location, as_of)
    try:
        relation = con.sql(sql_text, params=params)
        return relation.to_arrow_table() if relation is not None else pa.table({})
    except duckdb.Error as exc:
        raise LakeError(f"query failed: {engine.first_line(exc)}") from None
    finally:
        con.close()


def connect(location: Location, as_of: str | int | None = None) -> duckdb.DuckDBPyConnection:
    """A connection on which only reading the lake is possible (layer 2 of the module doc)."""
    if as_of is not None:
        con = catalog.attach_as_of(location, as_of, for_user_sql=True)
    else:
        con = catalog.attach_live(location, read_only=True, for_user_sql=True)
    try:
        if as_of is None:
            catalog.read_meta(con, location)  # "no memory lake here" for a catalog without one
        allowed = [p for p in (_data_path(con, location),) if p]
        con.execute("SET allowed_directories = $dirs", {"dirs": allowed})
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def check_statement(sql_text: str) -> None:
    """Refuse anything but one SELECT (or EXPLAIN of one) reading only the lake (layer 1)."""
    parser = _parser()
    try:
        statements = parser.extract_statements(sql_text)
    except duckdb.PermissionException:  # IMPORT DATABASE: parsing it reads the files it names
        raise QueryRefused(f"refused: {_first_word(sql_text)} statement ({READ_ONLY_HINT})") from None
    except duckdb.Error as exc:
        raise LakeError(f"query failed: {engine.first_line(exc)}") from None
    finally:
        parser.close()
    if len(statements) != 1:
        kinds = "; ".join(s.type.name.upper() for s in statements) or "none"
        raise QueryRefused(f"refused: {len(statements)} statements ({kinds}): lake query runs exactly one")
    statement = statements[0]
    kind = statement.type.name.upper()
    if kind == "EXPLAIN":
        check_statement(_explained(sql_text))
        return
    if kind != "SELECT":
        raise QueryRefused(f"refused: {_kind(statement)} ({HINTS.get(kind, READ_ONLY_HINT)})")
    tree = _tree(sql_text)
    if tree is None:  # a SELECT DuckDB cannot serialise: PRAGMA (rewritten into a SELECT by the parser)
        raise QueryRefused(f"refused: {_first_word(sql_text)} statement ({HINTS['PRAGMA']})")
    for kind_found, name in _functions(tree):
        if kind_found == "table" and name.lower() not in READ_TABLE_FUNCTIONS:
            raise QueryRefused(f"refused: table function {name} (lake query reads only the lake: no files, "
                               "other databases or maintenance; maintenance: `evokernel lake compact`)")
        if kind_found == "scalar" and name.lower() in ACTING_FUNCTIONS:
            raise QueryRefused(f"refused: function {name} (lake query only reads)")


def _kind(statement: Any) -> str:
    """How a refusal names a statement: its type, and its first word where that differs
    ("TRUNCATE (a DELETE statement)", "INSTALL (a LOAD statement)")."""
    kind, word = statement.type.name.upper(), _first_word(statement.query)
    return f"{kind} statement" if word == kind else f"{word} (a {kind} statement)"


def _first_word(sql_text: str) -> str:
    tokens = duckdb.tokenize(sql_text)
    if not tokens:
        return "empty"
    start = tokens[0][0]
    end = tokens[1][0] if len(tokens) > 1 else len(sql_text)
    return sql_text[start:end].strip().upper() or "empty"


def _explained(sql_text: str) -> str:
    """The statement an EXPLAIN [ANALYZE] explains (the text after those keywords)."""
    for offset, token_type in duckdb.tokenize(sql_text):
        word = sql_text[offset:].split(None, 1)[0].lower() if sql_text[offset:].split() else ""
        if not (token_type == duckdb.token_type.keyword and word in EXPLAIN_WORDS):
            return sql_text[offset:]
    return ""


def _parser() -> duckdb.DuckDBPyConnection:
    """A bare connection for parsing: parsing IMPORT DATABASE reads the files it names, so not here."""
    return duckdb.connect(config={"enable_external_access": False, "autoload_known_extensions": False,
                                  "autoinstall_known_extensions": False})


def _tree(sql_text: str) -> dict | None:
    con = _parser()
    try:
        found = json.loads(con.execute("SELECT json_serialize_sql($q)", {"q": sql_text}).fetchall()[0][0])
    finally:
        con.close()
    return None if found.get("error") else found


def _functions(node: Any) -> Iterator[tuple[str, str]]:
    """("table" | "scalar", name) of every function call in a serialised parse tree."""
    if isinstance(node, dict):
        if node.get("type") == "TABLE_FUNCTION" and isinstance(node.get("function"), dict):
            yield "table", str(node["function"].get("function_name", ""))
        elif node.get("class") == "FUNCTION" and "function_name" in node:
            yield "scalar", str(node["function_name"])
        for value in node.values():
            yield from _functions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _functions(value)


def _data_path(con: duckdb.DuckDBPyConnection, location: Location) -> str | None:
    """The directory the lake's data files are in (the only files this connection may read)."""
    if location.directory is not None:
        return datapath.own_data_path(location)
    row = con.execute(f"SELECT value FROM {engine.METADATA}.ducklake_metadata WHERE key = 'data_path'").fetchall()
    return datapath.resolve(location) or (str(row[0][0]) if row and row[0][0] else None)
