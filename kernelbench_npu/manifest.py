"""The manifest table: its schema, and a deterministic Parquet writer.

Determinism: rows sorted by task_id, a fixed schema, no timestamps and no pandas metadata, one row
group, fixed compression; the same rows give the same bytes (for the same pyarrow version, which
build.json records). ``reference_ms`` is the one measured column (see kernelbench_npu.build).
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
    ("original_shapes", pa.string()),  # JSON object: size constants as written in the problem
    ("adapted_shapes", pa.string()),  # JSON object: the same constants after the variant's size profile
    ("input_shapes", pa.string()),  # JSON list: shapes of get_inputs() after adaptation (null for scalars)
    ("output_shape", pa.string()),  # JSON list
    ("atol", pa.float64()),
    ("rtol", pa.float64()),
    ("lint_status", pa.string()),  # "ok" | "quarantined"
    ("lint_reason", pa.string()),  # null when ok
    ("reference_ms", pa.float64()),  # measured on the build machine; null when the reference did not run
    ("problem_file", pa.string()),  # path relative to BUILD/problems/
    ("adapted_sha256", pa.string()),  # sha256 of the adapted problem file
    ("notes", pa.string()),  # size-profile and alignment notes
])

COLUMNS = tuple(MANIFEST_SCHEMA.names)


def manifest_table(rows: list[dict]) -> pa.Table:
    """Rows (dicts keyed by COLUMNS) as a table with the manifest schema, sorted by task_id."""
    ordered = sorted(rows, key=lambda r: r["task_id"])
    return pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in ordered], schema=MANIFEST_SCHEMA)


def write_manifest(table: pa.Table, path: Path) -> None:
    """Write the table so that equal tables give equal bytes."""
    pq.write_table(
        table.replace_schema_metadata(None), path, compression="zstd", compression_level=3,
        row_group_size=max(1, table.num_rows), use_dictionary=False, write_statistics=True,
        store_schema=True, write_page_index=False,
    )
