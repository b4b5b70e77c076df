"""Turning caller rows into a pyarrow Table of a lake table's exact schema.

Missing nullable columns become null (``created_at``/``recorded_at`` become now); unknown
columns, wrong types and missing key columns are a LakeError naming the table and column.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping, Sequence

import pyarrow as pa

from memory_lake.errors import LakeError
from memory_lake.schema import ALL_TABLES, ITEM_KINDS

# Columns a row must carry (everything else may be null).
REQUIRED: dict[str, tuple[str, ...]] = {
    "items": ("item_id", "kind", "backend"),
    "attempts": ("attempt_id",),
    "retrievals": ("attempt_id", "item_id", "stage"),
    "value_updates": ("item_id", "stage", "q_after", "seq"),
    "campaigns": ("campaign_id",),
    "llm_calls": ("call_id",),
    "docs": ("item_id",),
    "postings": ("term", "item_id", "tf"),
}
_NOW_COLUMNS = ("created_at", "recorded_at")


def schema_of(table: str) -> pa.Schema:
    try:
        return ALL_TABLES[table]
    except KeyError:
        raise LakeError(f"unknown table {table!r} (tables: {', '.join(ALL_TABLES)})") from None


def to_table(table: str, rows: Sequence[Mapping] | pa.Table) -> pa.Table:
    """Validate rows against the table's schema and return them as a pyarrow Table."""
    schema = schema_of(table)
    columns = _columns_from_table(table, rows) if isinstance(rows, pa.Table) else _columns_from_rows(table, rows)
    n_rows = len(next(iter(columns.values()))) if columns else 0
    arrays = []
    for field in schema:
        if field.name in columns:
            arrays.append(_cast(table, field, columns[field.name]))
        elif field.name in _NOW_COLUMNS:
            arrays.append(pa.array([datetime.now(timezone.utc)] * n_rows, type=field.type))
        else:
            arrays.append(pa.nulls(n_rows, type=field.type))
    result = pa.Table.from_arrays(arrays, schema=schema)
    _check_required(table, result)
    return result


def _columns_from_rows(table: str, rows: Sequence[Mapping]) -> dict[str, list]:
    names = set(schema_of(table).names)
    seen: list[str] = []
    for row in rows:
        for key in row:
            if key not in names:
                raise LakeError(f"{table}: unknown column {key!r}")
            if key not in seen:
                seen.append(key)
    return {key: [row.get(key) for row in rows] for key in seen} if rows else {}


def _columns_from_table(table: str, data: pa.Table) -> dict[str, pa.ChunkedArray]:
    names = set(schema_of(table).names)
    for key in data.column_names:
        if key not in names:
            raise LakeError(f"{table}: unknown column {key!r}")
    return {key: data.column(key) for key in data.column_names}


def _cast(table: str, field: pa.Field, values) -> pa.Array | pa.ChunkedArray:
    try:
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            if values.type == field.type:
                return values
            if pa.types.is_string(values.type) != pa.types.is_string(field.type) and not pa.types.is_null(values.type):
                raise pa.ArrowInvalid(f"cannot convert {values.type} to {field.type}")
            return values.cast(field.type, safe=True)
        if pa.types.is_string(field.type) and any(v is not None and not isinstance(v, str) for v in values):
            raise pa.ArrowInvalid("expected str")
        return pa.array(values, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LakeError(f"{table}: column {field.name!r}: wrong type for {field.type} ({detail})") from None


def _check_required(table: str, data: pa.Table) -> None:
    for name in REQUIRED.get(table, ()):
        if data.column(name).null_count:
            raise LakeError(f"{table}: column {name!r}: required but missing or null")
    if table == "items" and data.num_rows:
        bad = set(data.column("kind").to_pylist()) - set(ITEM_KINDS)
        if bad:
            raise LakeError(f"items: column 'kind': {sorted(bad)[0]!r} is not one of {', '.join(ITEM_KINDS)}")
    if table in ("retrievals", "value_updates") and data.num_rows:
        bad_stages = set(data.column("stage").to_pylist()) - {1, 2}
        if bad_stages:
            raise LakeError(f"{table}: column 'stage': {sorted(bad_stages)[0]!r} is not 1 or 2")
