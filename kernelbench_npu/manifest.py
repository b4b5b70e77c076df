"""The manifest table and the measurements table: schemas, and a deterministic Parquet writer.

``manifest.parquet`` holds only what the build decides (ids, sizes, tolerances, lint verdicts,
estimates from the deterministic cost model): the same inputs give the same bytes (rows sorted by
task_id, a fixed schema, no timestamps and no pandas metadata, one row group, fixed compression;
for the same pyarrow version, which build.json records). What the build *measures* on this
machine (forward times) goes to ``measurements.parquet``, which no hash covers.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

MANIFEST_SCHEMA = pa.schema([
    ("task_id", pa.string()),
    ("level", pa.int32()),
    ("category", pa.string()),
    ("name", pa.string()),
    ("source_sha256", pa.string()),  # sha256 of the original problem file
    ("variant", pa.string()),  # backend name
    ("dtype", pa.string()),  # torch dtype name
    ("original_shapes", pa.string()),  # JSON object: every size site as written in the problem
    ("adapted_shapes", pa.string()),  # JSON object: the same sites at the task's sizes
    ("dims", pa.string()),  # JSON list: per size site its role, original, adapted, note (why left alone)
    ("balance", pa.float64()),  # largest / smallest shrink among dims >= 64 (null: none, or no shrink)
    ("input_shapes", pa.string()),  # JSON list: shapes of get_inputs() at the task's sizes (null for scalars)
    ("output_shape", pa.string()),  # JSON list
    ("estimated_ms", pa.float64()),  # meta-device cost model, one forward on this class of CPU (deterministic)
    ("atol", pa.float64()),
    ("rtol", pa.float64()),
    ("lint_status", pa.string()),  # "ok" | "quarantined"
    ("lint_reason", pa.string()),  # null when ok
    ("lint_mode", pa.string()),  # "task sizes" | "reduced sizes" | "meta device only"
    ("lint_shapes", pa.string()),  # JSON object: the size sites at the sizes the reference was linted at
    ("lint_notes", pa.string()),  # trivial outputs that pass under some input distributions only
    ("problem_file", pa.string()),  # path relative to BUILD/problems/
    ("adapted_sha256", pa.string()),  # sha256 of the adapted problem file
    ("notes", pa.string()),  # size-profile, lint-size and alignment notes
])

MEASUREMENTS_SCHEMA = pa.schema([
    ("task_id", pa.string()),
    ("reference_ms", pa.float64()),  # median forward at the task's sizes (null: linted at other sizes)
    ("lint_forward_ms", pa.float64()),  # median forward at the sizes linted (null: not run)
    ("gates_here", pa.string()),  # JSON list of {gate, runs, note} on the build machine (null: not judged)
])

COLUMNS = tuple(MANIFEST_SCHEMA.names)
MEASUREMENT_COLUMNS = tuple(MEASUREMENTS_SCHEMA.names)


def manifest_table(rows: list[dict]) -> pa.Table:
    """Rows (dicts keyed by COLUMNS) as a table with the manifest schema, sorted by task_id."""
    return _table(rows, MANIFEST_SCHEMA)


def measurements_table(rows: list[dict]) -> pa.Table:
    return _table(rows, MEASUREMENTS_SCHEMA)


def _table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    ordered = sorted(rows, key=lambda r: r["task_id"])
    return pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in ordered], schema=schema)


def write_manifest(table: pa.Table, path: Path) -> None:
    """Write the table so that equal tables give equal bytes."""
    pq.write_table(
        table.replace_schema_metadata(None), path, compression="zstd", compression_level=3,
        row_group_size=max(1, table.num_rows), use_dictionary=False, write_statistics=True,
        store_schema=True, write_page_index=False,
    )
