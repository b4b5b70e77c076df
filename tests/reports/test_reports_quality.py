"""The Great Expectations suite over the lake data the report reads: clean data passes, each
broken rule is caught and shown in the report (not hidden)."""

from __future__ import annotations

import pytest

import reports_handmade_lake as handmade
from reports_handmade_lake import make_lake
from memory_lake import Lake
from reports.build import write_report
from reports.metrics import resolve_campaigns
from reports.quality import check_lake_quality


def test_clean_lake_passes_every_expectation(handmade_con):
    quality = check_lake_quality(handmade_con, ("c1", "c2"))
    assert not quality.error
    assert quality.passed and len(quality.outcomes) >= 20
    assert {o.table for o in quality.outcomes} == {"attempts", "retrievals", "value_updates"}


@pytest.fixture(scope="module")
def dirty_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports-dirty")
    make_lake(root / "lake", extra_attempts=handmade.dirty_attempts()).close()
    con = Lake.open(root / "lake").connect()
    quality = check_lake_quality(con, resolve_campaigns(con, None))
    con.close()
    return quality, write_report(root / "lake", root / "out")


@pytest.mark.parametrize("description, bad_value", [
    ("no attempt without a campaign (campaign_id has a campaigns row)", "'ghost'"),
    ("raw reward within [-1, 1]", "1.5"),
    ("each correct attempt passed the hack gate", "False"),
    ("each feasible attempt passed the hack gate", "False"),
    ("speedup finite (no inf/NaN)", "False"),
    ("speedup CI contains the speedup (ci_low <= speedup)", "1.1"),
])
def test_each_broken_rule_fails_its_expectation(dirty_report, description, bad_value):
    quality, _ = dirty_report
    outcome = next(o for o in quality.outcomes if o.description == description)
    assert not outcome.passed and outcome.rows_failed == 1
    assert bad_value in outcome.examples


def test_unbroken_rules_still_pass_on_the_dirty_lake(dirty_report):
    quality, _ = dirty_report
    failed = {o.description for o in quality.failed}
    assert "attempt_id is unique" not in failed
    assert "each retrieved item exists in items" not in failed
    assert len(failed) == 6  # the six rules broken on purpose, nothing else


def test_a_failed_expectation_is_shown_in_the_report(dirty_report):
    quality, result = dirty_report
    assert result.expectations_passed is False
    page = result.html_path.read_text()
    assert f"{len(quality.failed)} of {len(quality.outcomes)} expectations FAILED" in page
    assert page.count('<tr class="fail">') == len(quality.failed)
    summary = result.summary_path.read_text()
    assert "expectations FAILED" in summary and "raw reward within [-1, 1]" in summary
