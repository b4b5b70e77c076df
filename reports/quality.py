"""The Great Expectations suite over the lake data a report reads, and its typed outcome.

The suite runs on the rows the metrics use (attempts of the campaigns in scope plus attempts that
name no campaign, their retrievals, and their value updates). Every expectation's outcome is
kept, passed or not, so the report can show a failure instead of hiding it. GX costs 3-5 s to
import, so it is imported inside ``check_lake_quality`` only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import duckdb

from reports.sql_files import query


@dataclass(frozen=True)
class ExpectationOutcome:
    table: str
    name: str  # the GX expectation type, e.g. expect_column_values_to_be_between
    description: str  # what it checks, in words
    passed: bool
    rows_checked: int
    rows_failed: int
    examples: str  # a few unexpected values, "" when passed


@dataclass(frozen=True)
class QualityReport:
    outcomes: tuple[ExpectationOutcome, ...]
    error: str = ""  # non-empty: the suite itself could not run (the report says so)

    @property
    def passed(self) -> bool:
        return not self.error and all(outcome.passed for outcome in self.outcomes)

    @property
    def failed(self) -> tuple[ExpectationOutcome, ...]:
        return tuple(outcome for outcome in self.outcomes if not outcome.passed)


# (description, expectation class name, kwargs); only_where=COL checks only the rows where COL is true.
_TRUE = [True]
ATTEMPT_EXPECTATIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("every attempt has an attempt_id", "ExpectColumnValuesToNotBeNull", {"column": "attempt_id"}),
    ("attempt_id is unique", "ExpectColumnValuesToBeUnique", {"column": "attempt_id"}),
    ("every attempt names a campaign", "ExpectColumnValuesToNotBeNull", {"column": "campaign_id"}),
    ("every attempt names its task", "ExpectColumnValuesToNotBeNull", {"column": "task_id"}),
    ("every attempt has an iteration", "ExpectColumnValuesToNotBeNull", {"column": "iteration"}),
    ("no attempt without a campaign (campaign_id has a campaigns row)", "ExpectColumnValuesToBeInSet",
     {"column": "campaign_id", "value_set": "<known campaigns>"}),
    ("raw reward within [-1, 1]", "ExpectColumnValuesToBeBetween",
     {"column": "reward", "min_value": -1.0, "max_value": 1.0}),
    ("speedup positive", "ExpectColumnValuesToBeBetween",
     {"column": "speedup", "min_value": 0.0, "strict_min": True}),
    ("speedup finite (no inf/NaN)", "ExpectColumnValuesToBeInSet", {"column": "speedup_finite", "value_set": _TRUE}),
    ("candidate latency positive", "ExpectColumnValuesToBeBetween",
     {"column": "candidate_ms", "min_value": 0.0, "strict_min": True}),
    ("reference latency positive", "ExpectColumnValuesToBeBetween",
     {"column": "reference_ms", "min_value": 0.0, "strict_min": True}),
    ("speedup CI contains the speedup (ci_low <= speedup)", "ExpectColumnPairValuesAToBeGreaterThanB",
     {"column_A": "speedup", "column_B": "ci_low", "or_equal": True, "ignore_row_if": "either_value_is_missing"}),
    ("speedup CI contains the speedup (speedup <= ci_high)", "ExpectColumnPairValuesAToBeGreaterThanB",
     {"column_A": "ci_high", "column_B": "speedup", "or_equal": True, "ignore_row_if": "either_value_is_missing"}),
    ("each correct attempt passed the hack gate", "ExpectColumnValuesToBeInSet",
     {"column": "hack_passed", "value_set": _TRUE, "only_where": "correct"}),
    ("each correct attempt passed the compile gate", "ExpectColumnValuesToBeInSet",
     {"column": "compile_passed", "value_set": _TRUE, "only_where": "correct"}),
    ("each feasible attempt passed the correctness gate", "ExpectColumnValuesToBeInSet",
     {"column": "correct", "value_set": _TRUE, "only_where": "feasible"}),
    ("each feasible attempt passed the hack gate", "ExpectColumnValuesToBeInSet",
     {"column": "hack_passed", "value_set": _TRUE, "only_where": "feasible"}),
    ("stage is 1 (drafting) or 2 (refining)", "ExpectColumnValuesToBeInSet", {"column": "stage", "value_set": [1, 2]}),
    ("iteration is non-negative", "ExpectColumnValuesToBeBetween", {"column": "iteration", "min_value": 0}),
)
RETRIEVAL_EXPECTATIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("each retrieved item exists in items", "ExpectColumnValuesToBeInSet", {"column": "item_known", "value_set": _TRUE}),
    ("retrieval stage is 1 or 2", "ExpectColumnValuesToBeInSet", {"column": "stage", "value_set": [1, 2]}),
    ("retrieval rank is non-negative", "ExpectColumnValuesToBeBetween", {"column": "rank", "min_value": 0}),
)
VALUE_UPDATE_EXPECTATIONS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("value update stage is 1 or 2", "ExpectColumnValuesToBeInSet", {"column": "stage", "value_set": [1, 2]}),
    ("q_after is finite", "ExpectColumnValuesToBeInSet", {"column": "q_after_finite", "value_set": _TRUE}),
    ("every value update has a seq", "ExpectColumnValuesToNotBeNull", {"column": "seq"}),
    ("alpha within (0, 1]", "ExpectColumnValuesToBeBetween",
     {"column": "alpha", "min_value": 0.0, "max_value": 1.0, "strict_min": True}),
)


def check_lake_quality(con: duckdb.DuckDBPyConnection, campaign_ids: Sequence[str]) -> QualityReport:
    """Run the suite over the rows the report reads; never raises for bad data, only reports it."""
    try:
        return _run_suite(con, list(campaign_ids))
    except Exception as exc:  # noqa: BLE001 - the report must state a broken suite, not crash
        return QualityReport(outcomes=(), error=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


def _run_suite(con: duckdb.DuckDBPyConnection, campaign_ids: list[str]) -> QualityReport:
    context = _quiet_context()
    params = {"campaign_ids": campaign_ids}
    known = query(con, "known_campaigns")["campaign_id"].to_list()
    outcomes: list[ExpectationOutcome] = []
    plan = (
        ("attempts", "quality_attempts", ATTEMPT_EXPECTATIONS),
        ("retrievals", "quality_retrievals", RETRIEVAL_EXPECTATIONS),
        ("value_updates", "quality_value_updates", VALUE_UPDATE_EXPECTATIONS),
    )
    for table, sql_name, expectations in plan:
        frame = query(con, sql_name, params).to_pandas()
        if frame.empty:
            continue
        outcomes.extend(_validate(context, table, frame, expectations, known))
    return QualityReport(outcomes=tuple(outcomes))


def _quiet_context():
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def _validate(context, table: str, frame, expectations, known_campaigns: list[str]) -> list[ExpectationOutcome]:
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.expectations.row_conditions import Column

    source = context.data_sources.add_or_update_pandas(f"lake_{table}")
    batch = source.add_dataframe_asset(table).add_batch_definition_whole_dataframe("all").get_batch(
        batch_parameters={"dataframe": frame}
    )
    suite = gx.ExpectationSuite(name=f"report_{table}")
    for description, class_name, kwargs in expectations:
        kwargs = dict(kwargs, meta={"check": description})
        if kwargs.get("value_set") == "<known campaigns>":
            kwargs["value_set"] = known_campaigns
        if "only_where" in kwargs:
            kwargs["row_condition"] = Column(kwargs.pop("only_where")) == True  # noqa: E712 - a GX condition
        suite.add_expectation(getattr(gxe, class_name)(**kwargs))
    result = batch.validate(suite)
    order = {spec[0]: index for index, spec in enumerate(expectations)}
    outcomes = [_outcome(table, res) for res in result.results]
    return sorted(outcomes, key=lambda outcome: order.get(outcome.description, len(order)))


def _outcome(table: str, res) -> ExpectationOutcome:
    detail = res.result or {}
    failed = int(detail.get("unexpected_count") or 0)
    raised = (res.exception_info or {}).get("raised_exception", False)
    examples = ", ".join(repr(value) for value in (detail.get("partial_unexpected_list") or [])[:5])
    if raised:
        examples = f"check raised: {(res.exception_info.get('exception_message') or '')[:200]}"
    return ExpectationOutcome(
        table=table,
        name=res.expectation_config.type,
        description=(res.expectation_config.meta or {}).get("check", res.expectation_config.type),
        passed=bool(res.success),
        rows_checked=int(detail.get("element_count") or 0),
        rows_failed=failed,
        examples="" if res.success else examples,
    )
