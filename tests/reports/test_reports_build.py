"""write_report end to end on real lakes: full, empty, partial, absent; and the CLI command."""

from __future__ import annotations

import base64
import importlib.util
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

import reports_handmade_lake as handmade
from reports_handmade_lake import make_lake
from cli import report_cmd
from memory_lake import Lake
from reports.build import ReportError, write_report
from reports.metrics import LONG_SCHEMA


@pytest.fixture(scope="module")
def full_report(handmade_lake_root, tmp_path_factory):
    return write_report(handmade_lake_root, tmp_path_factory.mktemp("reports-out") / "report")


def test_writes_the_three_outputs(full_report):
    assert full_report.expectations_passed and full_report.missing == ()
    for path in (full_report.html_path, full_report.summary_path, full_report.metrics_path):
        assert path.exists() and path.stat().st_size > 0
    assert sorted(p.name for p in (full_report.out / "figures").iterdir()) == [
        "category_bars.png", "learning_curves.png", "q_trajectories.png", "roofline.png", "speedup_distribution.png"]
    assert not [p for p in full_report.out.iterdir() if p.name.endswith(".tmp")]


def test_html_is_self_contained_with_decodable_png_figures(full_report):
    page = full_report.html_path.read_text()
    assert "http://" not in page and "https://" not in page and "<script" not in page
    images = page.split('src="data:image/png;base64,')[1:]
    assert len(images) == 5
    for image in images:
        assert base64.b64decode(image.split('"', 1)[0]).startswith(b"\x89PNG\r\n\x1a\n")


def test_summary_has_the_key_table_with_intervals(full_report):
    summary = full_report.summary_path.read_text()
    c1 = next(line for line in summary.splitlines() if line.startswith("| c1 (evokernel"))
    assert "| 75.0% | 50.0% | 25.0% |" in c1  # fast_1, fast_1.5, fast_2
    assert "1.82x [1.68, 1.95]" in c1  # geomean vs PyTorch with its interval
    assert "2.00x [1.64, 2.17]" in c1  # median speedup over the first draft with its interval
    assert "![Learning curves](figures/learning_curves.png)" in summary
    cost = [line for line in summary.splitlines() if line.startswith("| c1 (evokernel")][1]
    assert "| 1,700 (180 estimated) |" in cost  # tokens the server reported no usage for are said to be estimates


def test_metrics_parquet_is_the_long_table(full_report):
    long = pl.read_parquet(full_report.metrics_path)
    assert long.schema == pl.Schema(LONG_SCHEMA)
    value = long.filter((pl.col("metric") == "fast_1") & (pl.col("campaign_id") == "c2") & (pl.col("group") == "all"))
    assert value["value"].item() == 0.0


def test_empty_lake_gives_a_report_saying_what_is_missing(tmp_path):
    Lake.create(tmp_path / "lake", "cpu").close()
    result = write_report(tmp_path / "lake", tmp_path / "out")
    assert any(line.startswith("attempts: no rows") for line in result.missing)
    assert "campaigns: the lake holds no campaign yet" in result.missing
    page = result.html_path.read_text()
    assert "Missing from the lake" in page and "nothing to measure yet" in page
    assert pl.read_parquet(result.metrics_path).height == 0


def test_partial_lake_attempts_without_campaign_rows(tmp_path):
    make_lake(tmp_path / "lake", {"attempts": handmade.attempts}).close()
    result = write_report(tmp_path / "lake", tmp_path / "out")
    assert "campaign c1: no campaigns row (method, model and budget unknown)" in result.missing
    assert any(line.startswith("retrievals: no rows") for line in result.missing)
    assert result.expectations_passed is False  # every attempt lacks its campaign
    summary = result.summary_path.read_text()
    assert "no attempt without a campaign" in summary
    # without a campaigns row there is no budget: the attempt at iteration 10 counts
    assert "| c1 | 4 | 12 |" in summary


def test_unknown_campaign_is_reported_as_missing(handmade_lake_root, tmp_path):
    result = write_report(handmade_lake_root, tmp_path / "out", ["c2", "nope"])
    assert "campaign nope: no attempts in the lake" in result.missing
    assert "c1 (" not in result.summary_path.read_text()


def test_no_lake_at_the_path_is_a_one_line_error(tmp_path):
    with pytest.raises(ReportError, match="no memory lake here"):
        write_report(tmp_path / "nothing", tmp_path / "out")


def test_cli_report_command(handmade_lake_root, tmp_path):
    main_source = Path(importlib.util.find_spec("cli.main").origin).read_text()
    assert '"report_cmd",' in main_source  # registered in COMMAND_MODULES (read, not imported)
    app = typer.Typer()  # only this command: other commands' import errors must not fail this test
    report_cmd.register(app)
    app.command("noop")(lambda: None)  # two commands, so typer keeps the "report" subcommand name
    runner = CliRunner()
    ok = runner.invoke(app, ["report", "--lake", str(handmade_lake_root), "--out", str(tmp_path / "r"),
                             "--campaign", "c1,c2", "--strict"])
    assert ok.exit_code == 0, ok.output
    assert "data quality: passed" in ok.output and (tmp_path / "r" / "index.html").exists()
    missing = runner.invoke(app, ["report", "--lake", str(tmp_path / "none"), "--out", str(tmp_path / "x")])
    assert missing.exit_code == 2
    assert "error:" in missing.output and "Traceback" not in missing.output
