"""Running the report's SQL: one query per ``reports/sql/<name>.sql`` file, bound parameters only.

Each file starts with a comment that defines what it computes; the report quotes the metric
definitions from ``reports.definitions``, which names the file behind each metric.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import duckdb
import polars as pl

SQL_DIR = Path(__file__).resolve().parent / "sql"


@lru_cache(maxsize=None)
def sql_text(name: str) -> str:
    """The text of ``reports/sql/<name>.sql``."""
    return (SQL_DIR / f"{name}.sql").read_text()


def query(con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """Run one named query with bound ``$name`` parameters and return a polars DataFrame."""
    text = sql_text(name)
    bound = {key: value for key, value in (params or {}).items() if f"${key}" in text}
    return pl.from_arrow(con.sql(text, params=bound or None).to_arrow_table())
