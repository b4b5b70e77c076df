"""Loading the lake's queries from memory_lake/sql/*.sql (read once, cached)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def sql(name: str) -> str:
    """The text of memory_lake/sql/<name>.sql."""
    return resources.files("memory_lake").joinpath("sql", f"{name}.sql").read_text()
