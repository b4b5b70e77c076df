"""DuckDB views over the lake's committed files: one view per table (items, attempts,
retrievals, value_updates, campaigns, and the internal docs and postings), lake_meta, and
item_values (current Q per item and stage)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from memory_lake.schema import ALL_TABLES
from memory_lake.sqlfiles import sql
from memory_lake.storage import DataFile, Storage


def new_connection(storage: Storage) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    if not storage.local:
        con.register_filesystem(storage.fs)
    return con


def install_views(con: duckdb.DuckDBPyConnection, storage: Storage, files: dict[str, list[DataFile]],
                  q_init: float, previous: dict[str, list[DataFile]] | None = None,
                  by_name: frozenset[str] = frozenset()) -> None:
    """(Re)create the lake's views on ``con`` from explicit lists of visible files; with
    ``previous`` (the lists the views were made from), only the tables whose files changed.

    Files are read without union_by_name: every file of a format version has the table's full
    schema (rows.to_table writes every column), which saves reading each file's footer here. The
    tables in ``by_name`` (ADDED_COLUMNS, in a lake created before them) are read by column name, so
    files written before a column existed still read.
    """
    for table, schema in ALL_TABLES.items():
        if previous is not None and previous.get(table) == files.get(table):
            continue
        paths = [storage.duck_path(f.path) for f in files.get(table, [])]
        if paths:
            relation = con.read_parquet(paths, union_by_name=table in by_name)
        else:
            relation = con.from_arrow(schema.empty_table())
        relation.create_view(table, replace=True)
    if previous is not None:
        return
    con.from_arrow(pa.table({"q_init": pa.array([float(q_init)], pa.float64())})).create_view("lake_meta", replace=True)
    con.execute("CREATE OR REPLACE TEMP VIEW item_values AS " + sql("item_values"))
