"""Moving memory between lakes (the paper's cross-model transfer protocol).

An export is one Parquet file: the items columns plus q1, n_updates_1, q2, n_updates_2 (the
current Q per stage) and source_lake; test tasks and unwanted kinds can be filtered out.
Import adds the items with their original item_id, source_attempt_id and campaign_id
(provenance), skips ids the target already holds, and records each carried-over Q as one
value_updates row (reward null, attempt_id "import:<file name>", q_after = the exported Q)
appended under the values lock like any other update.

Seed items (``api_template``: the backend's knowledge every lake gets at ``lake init``, under ids
of its own) are matched by content, not id: an exported template whose backend, title, body and
code the target already holds is that seed, not a new item, so importing into a fresh lake adds
no second copy. Its exported Qs go to the target's seed for the stages the target has not
learned yet (a fresh lake's seeds have no Q history; a lake with its own keeps it).
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
    try:
        with fs.open(tmp, "wb") as handle:
            pq.write_table(data, handle, compression="zstd")
        fs.mv(tmp, path)
    except OSError as exc:  # a missing or read-only directory, a full disk: one line
        raise LakeError(f"{out}: cannot write the export ({exc.strerror or str(exc).splitlines()[0]})") from None
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
    """Add an export's items to ``lake`` keeping ids, provenance and Q values (seeds: see above)."""
    data = read_export(path)
    ids = data.column("item_id").to_pylist()
    known = set(lake.query(sql("known_items"), {"item_ids": ids}).column(0).to_pylist()) if ids else set()
    seeds, learned = _same_seeds(lake, data, known)
    keep = pa.array([i not in known and i not in seeds for i in ids])
    rows = data.select(["item_id", "q1", "n_updates_1", "q2", "n_updates_2"]).to_pylist()
    data = data.filter(keep)
    if data.num_rows:
        lake.append("items", data.select(ITEMS.names))
    wanted = []
    for row in rows:
        target = row["item_id"] if row["item_id"] not in known else None
        target = seeds.get(row["item_id"], target)
        for stage in (1, 2):
            if target and row[f"n_updates_{stage}"] and (target, stage) not in learned:
                wanted.append((target, stage, float(row[f"q{stage}"])))
    lake.set_values(wanted, attempt_id=f"import:{Path(str(path)).name}")
    return TransferResult(items=data.num_rows, skipped=len(known) + len(seeds), q_values=len(wanted))


def _same_seeds(lake, data: pa.Table, known: set[str]) -> tuple[dict[str, str], set[tuple[str, int]]]:
    """Exported api_templates the target holds under another id (export id -> target id), and the
    (target seed, stage) pairs that already have Q history there."""
    mine = lake.query(sql("seed_items")).to_pylist()
    by_content = {_content(row): row["item_id"] for row in mine}
    learned = {(row["item_id"], stage) for row in mine for stage in (1, 2) if row[f"n_updates_{stage}"]}
    seeds = {}
    for row in data.select(["item_id", "kind", "backend", "title", "body", "code"]).to_pylist():
        if row["kind"] == "api_template" and row["item_id"] not in known and _content(row) in by_content:
            seeds[row["item_id"]] = by_content[_content(row)]
    return seeds, learned


def _content(row: dict) -> tuple:
    return row["backend"], row["title"] or "", row["body"] or "", row["code"] or ""
