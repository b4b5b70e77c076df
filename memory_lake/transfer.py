"""Moving memory between lakes (the paper's cross-model transfer protocol).

An export is one Parquet file: the items columns plus q1, n_updates_1, q2, n_updates_2 (the
current Q per stage) and source_lake; test tasks and unwanted kinds can be filtered out.
Import adds the items with their original item_id, source_attempt_id and campaign_id
(provenance), skips ids the target already holds, and records each carried-over Q as one
value_updates row (reward null, attempt_id "import:<file name>", q_after = the exported Q)
appended under the values lock like any other update.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from memory_lake.errors import LakeError
from memory_lake.schema import ITEMS
from memory_lake.sqlfiles import sql

EXTRA_COLUMNS = ("q1", "n_updates_1", "q2", "n_updates_2", "source_lake")


@dataclass(frozen=True)
class TransferResult:
    items: int
    skipped: int
    q_values: int


def export_items(lake, out: str | Path, exclude_tasks: Sequence[str] = (), kinds: Sequence[str] = ()) -> TransferResult:
    """Write the lake's items (filtered) with their current Qs to one Parquet file."""
    data = lake.query(sql("export_items"), {"kinds": list(kinds), "exclude_tasks": list(exclude_tasks)})
    data = data.append_column("source_lake", pa.array([lake.location.label] * data.num_rows, pa.string()))
    fs, path = fsspec.core.url_to_fs(str(out))
    tmp = f"{path}.tmp-export"
    with fs.open(tmp, "wb") as handle:
        pq.write_table(data, handle, compression="zstd")
    fs.mv(tmp, path)
    n_q = sum(1 for a, b in zip(data.column("n_updates_1").to_pylist(), data.column("n_updates_2").to_pylist()) if a or b)
    return TransferResult(items=data.num_rows, skipped=0, q_values=n_q)


def read_export(path: str | Path) -> pa.Table:
    try:
        with fsspec.open(str(path), "rb") as handle:
            data = pq.read_table(handle)
    except FileNotFoundError:
        raise LakeError(f"{path}: export file not found") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise LakeError(f"{path}: not a lake export ({str(exc).splitlines()[0]})") from None
    missing = [c for c in (*ITEMS.names, "q1", "q2", "n_updates_1", "n_updates_2") if c not in data.column_names]
    if missing:
        raise LakeError(f"{path}: not a lake export (missing column {missing[0]!r})")
    return data


def import_items(lake, path: str | Path) -> TransferResult:
    """Add an export's items to ``lake`` keeping ids, provenance and Q values."""
    data = read_export(path)
    ids = data.column("item_id").to_pylist()
    known = set(lake.query(sql("known_items"), {"item_ids": ids}).column(0).to_pylist()) if ids else set()
    keep = pa.array([i not in known for i in ids])
    data = data.filter(keep)
    if data.num_rows:
        lake.append("items", data.select(ITEMS.names))
    label = f"import:{Path(str(path)).name}"
    wanted = []
    for row in data.select(["item_id", "q1", "n_updates_1", "q2", "n_updates_2"]).to_pylist():
        for stage in (1, 2):
            if row[f"n_updates_{stage}"]:
                wanted.append((row["item_id"], stage, float(row[f"q{stage}"])))
    lake.set_values(wanted, attempt_id=label)
    return TransferResult(items=data.num_rows, skipped=len(known), q_values=len(wanted))
