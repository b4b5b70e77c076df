"""The task contract between a benchmark build and everything that consumes it.

A build directory holds ``manifest.parquet`` (one row per task), ``measurements.parquet`` (what
the build measured: forward times), ``problems/`` (the adapted KernelBench-format files) and
``build.json``. :func:`load_build` turns it into typed, frozen :class:`TaskSpec` objects; the
verifier and the agent never read the manifest directly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

BACKENDS = ("cpu", "cuda", "triton", "ascendc", "triton-ascend")
LINT_OK = "ok"
LINT_QUARANTINED = "quarantined"


class BuildError(ValueError):
    """A build directory is missing or malformed; the message names the file and field."""


@dataclass(frozen=True)
class TaskSpec:
    """One task of one variant, as the verifier and the agent see it."""

    task_id: str  # stable id, e.g. "L1/019_relu"
    level: int
    category: str
    name: str
    variant: str  # backend name: cpu | cuda | triton | ascendc | triton-ascend
    dtype: str  # torch dtype name, e.g. "float32"
    source: str  # the adapted problem file (KernelBench format: Model, get_inputs, get_init_inputs)
    source_sha256: str
    atol: float
    rtol: float
    original_shapes: str  # JSON object: module-level size constants before adaptation
    adapted_shapes: str  # JSON object: the same constants after the variant's size profile
    lint_status: str  # "ok" or "quarantined"
    lint_reason: str | None
    reference_ms: float | None  # measured at the task's sizes when the build linted it there (measurements.parquet)
    problem_path: Path

    @property
    def quarantined(self) -> bool:
        return self.lint_status != LINT_OK


@dataclass(frozen=True)
class Build:
    """A published benchmark build."""

    root: Path
    build_hash: str
    backend: str
    tasks: tuple[TaskSpec, ...]

    def task(self, task_id: str) -> TaskSpec:
        for spec in self.tasks:
            if spec.task_id == task_id:
                return spec
        raise BuildError(f"{self.root / 'manifest.parquet'}: task_id {task_id!r} not in this build")

    def runnable(self) -> tuple[TaskSpec, ...]:
        """Tasks that passed lint (quarantined ones stay in the manifest but are not attempted)."""
        return tuple(t for t in self.tasks if not t.quarantined)


_REQUIRED = (
    "task_id", "level", "category", "name", "source_sha256", "variant", "dtype",
    "original_shapes", "adapted_shapes", "atol", "rtol", "lint_status", "lint_reason", "problem_file",
)


def load_build(root: str | Path) -> Build:
    """Read a build directory written by ``evokernel build``."""
    root = Path(root)
    manifest_path, meta_path = root / "manifest.parquet", root / "build.json"
    for path in (manifest_path, meta_path):
        if not path.is_file():
            raise BuildError(f"{path}: not found (is {root} a benchmark build?)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise BuildError(f"{meta_path}: invalid JSON ({exc.msg})") from None
    for key in ("build_hash", "backend"):
        if key not in meta:
            raise BuildError(f"{meta_path}: missing field {key!r}")
    rows = read_table(manifest_path).to_pylist()
    missing = [c for c in _REQUIRED if rows and c not in rows[0]]
    if missing:
        raise BuildError(f"{manifest_path}: missing column {missing[0]!r}")
    timings = _reference_ms(root / "measurements.parquet")
    tasks = tuple(_task_from_row(root, {**row, "reference_ms": timings.get(row["task_id"], row.get("reference_ms"))})
                  for row in rows)
    return Build(root=root, build_hash=meta["build_hash"], backend=meta["backend"], tasks=tasks)


def read_table(path: Path, columns: list[str] | None = None) -> pa.Table:
    """A build's Parquet file; an empty, truncated or foreign one is a one-line BuildError."""
    try:
        with pq.ParquetFile(path) as handle:  # not read_table: its dataset layer imports pandas (0.2 s)
            return handle.read(columns=columns)
    except (pa.ArrowException, OSError) as exc:
        size = path.stat().st_size if path.is_file() else 0
        why = re.sub(r"^Could not open Parquet input source '.*?': ", "", str(exc).splitlines()[0])
        what = "empty (0 bytes)" if size == 0 else f"not a readable Parquet file ({why})"
        raise BuildError(f"{path}: {what}; rebuild it (`evokernel build ... --out {path.parent}`)") from None


def _reference_ms(path: Path) -> dict[str, float | None]:
    """task_id -> measured reference forward (ms); empty when the build has no measurements file."""
    if not path.is_file():
        return {}
    table = read_table(path, columns=["task_id", "reference_ms"])
    return dict(zip(table["task_id"].to_pylist(), table["reference_ms"].to_pylist()))


def _task_from_row(root: Path, row: dict) -> TaskSpec:
    problem_path = root / "problems" / row["problem_file"]
    if not problem_path.is_file():
        raise BuildError(f"{problem_path}: problem file of task {row['task_id']!r} not found")
    return TaskSpec(
        task_id=row["task_id"], level=int(row["level"]), category=row["category"], name=row["name"],
        variant=row["variant"], dtype=row["dtype"], source=problem_path.read_text(),
        source_sha256=row["source_sha256"], atol=float(row["atol"]), rtol=float(row["rtol"]),
        original_shapes=row["original_shapes"], adapted_shapes=row["adapted_shapes"],
        lint_status=row["lint_status"], lint_reason=row["lint_reason"],
        reference_ms=row["reference_ms"], problem_path=problem_path,
    )
