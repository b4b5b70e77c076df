"""Fixtures of the report tests: the hand-made lake (reports_handmade_lake.py) as a real Lake."""

from __future__ import annotations

import pytest

import reports_handmade_lake as handmade
from memory_lake import Lake


def make_lake(root, tables=handmade.TABLE_ROWS, extra_attempts=()):
    lake = Lake.create(root, "cpu")
    for table, rows in tables.items():
        lake.append(table, rows())
    if extra_attempts:
        lake.append("attempts", list(extra_attempts))
    return lake


@pytest.fixture(scope="session")
def handmade_lake_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports-lake") / "lake"
    make_lake(root).close()
    return root


@pytest.fixture()
def handmade_con(handmade_lake_root):
    con = Lake.open(handmade_lake_root).connect()
    yield con
    con.close()
