"""The `report` Prefect flow under the shared prefect_test_harness, and its task body via .fn()."""

from __future__ import annotations

import pytest

from flows.report import report as report_flow
from tasks.report import write_report_task


def test_task_body_writes_the_report(handmade_lake_root, tmp_path):
    result = write_report_task.fn(str(handmade_lake_root), str(tmp_path / "out"), ["c1"])
    assert result.html_path.exists() and result.expectations_passed


@pytest.mark.flow
def test_report_flow_wraps_write_report(prefect_harness, handmade_lake_root, tmp_path):
    out = report_flow(lake=str(handmade_lake_root), out=str(tmp_path / "out"), campaign_ids=None)
    assert out["expectations_passed"] is True and out["missing"] == []
    assert (tmp_path / "out" / "index.html").exists() and out["html"].endswith("index.html")
    assert (tmp_path / "out" / "metrics.parquet").exists()
