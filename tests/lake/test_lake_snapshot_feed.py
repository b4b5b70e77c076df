"""Retrieval's view of new snapshots (readstate.py): through DuckDB for a SQLite catalog, straight
from a PostgreSQL catalog with psycopg; it must see every commit another Lake makes, compaction's
included, and survive a dropped catalog connection."""

from __future__ import annotations

import psycopg
import pytest
from lake_fixtures import SEEDS

from memory_lake import Lake, NewItem, RetrievalRequest


def request(text: str, n: int = 3) -> RetrievalRequest:
    return RetrievalRequest(attempt_id="a", task_id="t", task_text=text, category="activation", backend="cpu",
                            stage=1, n=n, lam=3, epsilon=0.0, seed=1, include_templates=False, kinds=("trace",))


def test_a_reader_sees_another_lakes_items_and_its_compaction(lake_factory):
    uri = lake_factory.new()
    with Lake.create(uri, "cpu", SEEDS) as writer, Lake.open(uri) as reader:
        assert reader.retrieve(request("zyxwv gelu"), record=False) == ()  # nothing matches yet
        writer.add_items([NewItem(kind="trace", backend="cpu", title="zyxwv gelu", body="zyxwv tile gelu")])
        assert [r.title for r in reader.retrieve(request("zyxwv gelu"), record=False)] == ["zyxwv gelu"]
        assert not reader.files().paths("champions")
        writer.compact()
        assert reader.files().paths("champions"), "compaction's snapshots are seen by the other reader"
        assert [r.title for r in reader.retrieve(request("zyxwv gelu"), record=False)] == ["zyxwv gelu"]


@pytest.mark.parametrize("catalog_factory", ["postgres"], indirect=True)
def test_a_dropped_postgres_catalog_connection_is_reopened(catalog_factory):
    uri = catalog_factory.new()
    conninfo = uri[len("ducklake:postgres:"):]
    with Lake.create(uri, "cpu", SEEDS) as lake:
        lake.add_items([NewItem(kind="trace", backend="cpu", title="zyxwv relu", body="zyxwv relu")])
        assert len(lake.retrieve(request("zyxwv relu"), record=False)) == 1
        feed = lake._state._feed
        with psycopg.connect(conninfo, autocommit=True) as admin:  # the server drops the feed's session
            admin.execute("SELECT pg_terminate_backend(%s)", (feed._db.info.backend_pid,))
        lake.add_items([NewItem(kind="trace", backend="cpu", title="zyxwv relu 2", body="zyxwv relu")])
        assert len(lake.retrieve(request("zyxwv relu"), record=False)) == 2
