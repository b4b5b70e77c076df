"""A column added to a table after lakes were written: files from before it still read (as NULL)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from memory_lake import Lake
from memory_lake.schema import ADDED_COLUMNS, SCHEMA_REVISION


def _row(attempt_id: str, **extra) -> dict:
    return {"attempt_id": attempt_id, "campaign_id": "c", "task_id": "t", "stage": 1, "iteration": 0,
            "input_tokens": 10, "output_tokens": 5, **extra}


def test_attempts_written_before_tokens_estimated_existed_still_read(tmp_path):
    assert "tokens_estimated" in ADDED_COLUMNS["attempts"]
    lake = Lake.create(tmp_path / "lake", "cpu")
    lake.append("attempts", [_row("old")])
    lake.close()
    (old_file,) = (tmp_path / "lake" / "attempts").glob("*.parquet")
    table = pq.read_table(old_file)
    pq.write_table(table.drop_columns(["tokens_estimated"]), old_file)  # as a lake written before the column
    meta_file = tmp_path / "lake" / "lake.json"
    meta = json.loads(meta_file.read_text())
    assert meta.pop("schema_revision") == SCHEMA_REVISION  # new lakes say they have every column
    meta_file.write_text(json.dumps(meta))
    lake = Lake.open(tmp_path / "lake")
    try:
        lake.append("attempts", [_row("new", tokens_estimated=True)])
        rows = lake.query("SELECT attempt_id, tokens_estimated, input_tokens FROM attempts ORDER BY attempt_id")
        assert rows.to_pylist() == [{"attempt_id": "new", "tokens_estimated": True, "input_tokens": 10},
                                    {"attempt_id": "old", "tokens_estimated": None, "input_tokens": 10}]
    finally:
        lake.close()
