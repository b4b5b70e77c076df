"""DuckDB views over the lake's committed files: one view per table (items, attempts,
retrievals, value_updates, campaigns, and the internal docs and postings), lake_meta, and
item_values (current Q per item and stage)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from memory_lake.schema import ALL_TABLES, GROWN_AT_FORMAT
from memory_lake.sqlfiles import sql
from memory_lake.storage import DataFile, Storage


def new_connection(storage: Storage) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    if not storage.local:
        con.register_filesystem(storage.fs)
    return con


def install_views(con: duckdb.DuckDBPyConnection, storage: Storage, files: dict[str, list[DataFile]],
                  q_init: float, previous: dict[str, list[DataFile]] | None = None, lake_format: int = 2) -> None:
    """(Re)create the lake's views on ``con`` from explicit lists of visible files; with
    ``previous`` (the lists the views were made from), only the tables whose files changed.

    Files are read without union_by_name where every file has the table's full schema (rows.to_table
    writes every column), which saves reading each file's footer here; a table that grew after the
    lake's format (schema.GROWN_AT_FORMAT) is read by name, its new columns null in older files.
    """
    for table, schema in ALL_TABLES.items():
        if previous is not None and previous.get(table) == files.get(table):
            continue
        paths = [storage.duck_path(f.path) for f in files.get(table, [])]
        if paths:
            relation = _with_all_columns(con.read_parquet(paths, union_by_name=lake_format < GROWN_AT_FORMAT.get(table, 0)),
                                         schema)
        else:
            relation = con.from_arrow(schema.empty_table())
        relation.create_view(table, replace=True)
    if previous is not None:
        return
    con.from_arrow(pa.table({"q_init": pa.array([float(q_init)], pa.float64())})).create_view("lake_meta", replace=True)
    con.execute("CREATE OR REPLACE TEMP VIEW item_values AS " + sql("item_values"))


_DUCK_TYPES = {pa.string(): "VARCHAR", pa.int8(): "TINYINT", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
               pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}


def _with_all_columns(relation: duckdb.DuckDBPyRelation, schema: pa.Schema) -> duckdb.DuckDBPyRelation:
    """The relation with every column of ``schema``, in order; columns its files lack are typed nulls."""
    present = set(relation.columns)
    if all(field.name in present for field in schema):
        return relation
    return relation.project(", ".join(
        f'"{f.name}"' if f.name in present else f'CAST(NULL AS {_DUCK_TYPES.get(f.type, "TIMESTAMPTZ")}) AS "{f.name}"'
        for f in schema))
