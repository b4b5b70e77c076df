"""A column added to a table after a lake was created: opening the lake adds it to the catalog
(DuckLake's ALTER TABLE), rows written before read it as NULL, and nothing stored is lost."""

from __future__ import annotations

from memory_lake import Lake
from memory_lake.catalog import add_missing_columns


def _row(attempt_id: str, **extra) -> dict:
    return {"attempt_id": attempt_id, "campaign_id": "c", "task_id": "t", "stage": 1, "iteration": 0,
            "input_tokens": 10, "output_tokens": 5, **extra}


def test_a_lake_created_before_a_column_gains_it_on_open_and_old_rows_read_null(catalog_factory):
    uri = catalog_factory.new()
    lake = Lake.create(uri, "cpu")
    lake.append("attempts", [_row("old", tokens_estimated=False)])
    with lake._guard:  # as a lake written by a version that had no tokens_estimated column
        lake._con.execute("ALTER TABLE attempts DROP COLUMN tokens_estimated")
        lake._con.execute("ALTER TABLE llm_calls DROP COLUMN tokens_estimated")
    lake.close()
    lake = Lake.open(uri)
    try:
        lake.append("attempts", [_row("new", tokens_estimated=True)])
        rows = lake.query("SELECT attempt_id, tokens_estimated, input_tokens FROM attempts ORDER BY attempt_id")
        assert rows.to_pylist() == [{"attempt_id": "new", "tokens_estimated": True, "input_tokens": 10},
                                    {"attempt_id": "old", "tokens_estimated": None, "input_tokens": 10}]
        with lake._guard:
            assert add_missing_columns(lake._con) == ()  # idempotent: a second process finds nothing to add
    finally:
        lake.close()
