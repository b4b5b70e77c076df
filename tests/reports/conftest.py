"""Fixtures of the report tests: the hand-made lake (reports_handmade_lake.py) as a real Lake."""

from __future__ import annotations

import pytest

from memory_lake import Lake
from reports_handmade_lake import make_lake


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
