"""Great Expectations suite for the manifest, run before a build is published.

Uses an ephemeral GX context (nothing written to disk) and imports GX lazily (3-5 s). A violation
raises :class:`ManifestValidationError` naming the first failed expectation and its column.
"""

from __future__ import annotations

import os

import pyarrow as pa

from kernelbench_npu.spec import BACKENDS, LINT_OK, LINT_QUARANTINED

KEY_COLUMNS = ("task_id", "level", "category", "name", "source_sha256", "variant", "dtype",
               "original_shapes", "adapted_shapes", "dims", "atol", "rtol", "lint_status", "lint_mode", "problem_file")
ATOL_RANGE = (1e-12, 1e-1)
RTOL_RANGE = (1e-6, 1e-1)
LINT_MODES = ("task sizes", "reduced sizes", "meta device only")


class ManifestValidationError(ValueError):
    """The manifest broke an expectation; the message names it."""


def manifest_expectations() -> list:
    """The suite: column types, non-null keys, unique ids, allowed values, tolerance ranges, reasons."""
    import great_expectations as gx

    E = gx.expectations
    suite = [E.ExpectColumnValuesToNotBeNull(column=c) for c in KEY_COLUMNS]
    suite += [
        E.ExpectColumnValuesToBeUnique(column="task_id"),
        E.ExpectColumnValuesToMatchRegex(column="task_id", regex=r"^[A-Za-z0-9-]*L[1-4]/[^/\s]+$"),
        E.ExpectColumnValuesToBeInSet(column="level", value_set=[1, 2, 3, 4]),
        E.ExpectColumnValuesToBeInSet(column="variant", value_set=list(BACKENDS)),
        E.ExpectColumnValuesToBeInSet(column="dtype", value_set=["float32", "float16", "bfloat16"]),
        E.ExpectColumnValuesToBeInSet(column="lint_status", value_set=[LINT_OK, LINT_QUARANTINED]),
        E.ExpectColumnValuesToMatchRegex(column="source_sha256", regex=r"^[0-9a-f]{64}$"),
        E.ExpectColumnValuesToBeBetween(column="atol", min_value=ATOL_RANGE[0], max_value=ATOL_RANGE[1]),
        E.ExpectColumnValuesToBeBetween(column="rtol", min_value=RTOL_RANGE[0], max_value=RTOL_RANGE[1]),
        E.ExpectColumnValuesToBeInSet(column="lint_mode", value_set=list(LINT_MODES)),
        E.ExpectColumnValuesToBeBetween(column="estimated_ms", min_value=0, strict_min=True),
        E.ExpectColumnValuesToBeBetween(column="balance", min_value=1.0),
        E.ExpectColumnPairValuesToBeEqual(column_A="lint_status", column_B="lint_status_implied"),
    ]
    for column, kind in (("level", "int"), ("atol", "float"), ("rtol", "float"), ("task_id", "str")):
        suite.append(E.ExpectColumnValuesToBeInTypeList(column=column, type_list=_TYPE_NAMES[kind]))
    return suite


_TYPE_NAMES = {
    "int": ["int", "int32", "int64", "Int32", "Int64", "int32[pyarrow]", "int64[pyarrow]"],
    "float": ["float", "float64", "Float64", "double[pyarrow]"],
    "str": ["str"],
}


def validate_manifest(table: pa.Table) -> None:
    """Run the suite on the manifest; raise ManifestValidationError on the first failed expectation."""
    if table.num_rows == 0:
        raise ManifestValidationError("manifest: no tasks (expect_table_row_count_to_be_between min 1)")
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx

    from great_expectations.data_context.types.base import ProgressBarsConfig

    frame = table.to_pandas()
    for name in frame.columns:  # pandas' StringDtype trips GX's type check; plain Python str objects do not
        if str(frame[name].dtype) == "str":
            frame[name] = frame[name].astype(object)
    # A quarantined task must carry a reason and an ok task must not: checked as a derived column so
    # the failure names an expectation like any other.
    has_reason = frame["lint_reason"].notna() & (frame["lint_reason"].astype("string").str.len() > 0)
    frame["lint_status_implied"] = has_reason.map({True: LINT_QUARANTINED, False: LINT_OK})
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (context.data_sources.add_pandas("evokernel_build").add_dataframe_asset("manifest")
             .add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": frame}))
    suite = context.suites.add(gx.ExpectationSuite(name="manifest", expectations=manifest_expectations()))
    result = batch.validate(suite)
    for outcome in result.results:
        if not outcome.success:
            config = outcome.expectation_config
            kwargs = {k: v for k, v in config.kwargs.items() if k in ("column", "column_A", "column_B")}
            detail = _unexpected(outcome)
            raise ManifestValidationError(
                f"manifest.parquet: expectation {config.type} failed for {kwargs}{detail}")


def _unexpected(outcome) -> str:
    values = (outcome.result or {}).get("partial_unexpected_list") or []
    return f" (e.g. {values[:3]!r})" if values else ""
