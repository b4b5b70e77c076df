"""``evokernel build --explain TASK_ID``: one task of a build, as a person reads it.

Original vs adapted sizes (per size site: role, shrink, why a size was left alone; equal layer
widths in the model's code on one line), the task's input and output shapes, the cost estimate,
the tolerance, how the reference was linted, the verdict with every reason, the forward time
the build measured, and which verifier gates run on the build machine for this task (the build's
check of its verification path, :mod:`kernelbench_npu.judge`).
"""

from __future__ import annotations

import json
from pathlib import Path


from kernelbench_npu.judge import gates_from_json
from kernelbench_npu.size_params import FLOORS
from kernelbench_npu.spec import BuildError, read_table


def explain_task(root: str | Path, task_id: str) -> str:
    """A multi-line explanation of ``task_id`` in the build at ``root``."""
    row = _row(Path(root), task_id)
    timing = _measurement(Path(root), task_id)
    lines = [f"{row['task_id']}  ({row['variant']}, {row['dtype']}, level {row['level']}, {row['category']})",
             f"  problem file   problems/{row['problem_file']}"]
    lines += _sizes(row)
    lines.append(f"  inputs         {row['input_shapes']}  ->  output {row['output_shape']}")
    if row.get("estimated_ms") is not None:
        lines.append(f"  estimate       {row['estimated_ms']:.3g} ms per forward (meta-device cost model)")
    lines.append(f"  tolerance      atol={row['atol']:g}  rtol={row['rtol']:g}")
    lines.append(f"  lint           {row['lint_mode']}" + (f" {row['lint_shapes']}" if row["lint_mode"] != "task sizes" else ""))
    verdict = row["lint_status"] + (f": {row['lint_reason']}" if row["lint_reason"] else "")
    lines.append(f"  verdict        {verdict}")
    if row.get("lint_notes"):
        lines.append(f"  marked         {row['lint_notes']}")
    lines.append(f"  notes          {row['notes']}")
    forward = timing.get("lint_forward_ms")
    lines.append(f"  measured       {forward:g} ms per forward at the sizes linted (measurements.parquet)" if forward
                 is not None else "  measured       nothing: the reference was not run here")
    return "\n".join(lines + _gates_here(row, timing))


def _gates_here(row: dict, timing: dict) -> list[str]:
    """Which gates the build machine runs for this task (empty for builds made without a judge)."""
    gates = gates_from_json(timing.get("gates_here"))
    if not gates:
        return ["  gates here     not checked: this build ran no verification-path check"] \
            if row["variant"] in ("ascendc", "triton-ascend") and row["lint_status"] == "ok" else []
    head = "  gates here     "
    return [(head if i == 0 else " " * len(head)) + g.line() for i, g in enumerate(gates)]


def _sizes(row: dict) -> list[str]:
    dims = json.loads(row.get("dims") or "[]")
    scalable = [d for d in dims if d["role"] in FLOORS]
    fixed = [d for d in dims if d["role"] not in FLOORS]
    balance = row.get("balance")
    out = ["  sizes          original -> adapted" + (f"  (balance {balance:.3g}: largest/smallest shrink of sizes >= 64)"
                                                    if balance else "")]
    scalable = _grouped(scalable)
    width = max((len(d["key"]) for d in scalable), default=0)
    for d in scalable:
        change = f"{d['original']} -> {d['adapted']}"
        if d["adapted"] != d["original"]:
            change += f"  (/{d['original'] / d['adapted']:.3g})"
        out.append(f"    {d['key']:<{width}}  {d['role']:<9} {change}" + (f"  [{d['note']}]" if d["note"] else ""))
    if fixed:
        out.append("    never scaled (geometry, unused): " + ", ".join(f"{d['key']}={d['original']}" for d in fixed))
    return out if dims else ["  sizes          (no size constants)"]


def _grouped(dims: list[dict]) -> list[dict]:
    """Layer widths written in the model's code (keys ``Class.method:LINE:COL``) that share a role,
    a size and a fate print as one line: ``Model.__init__:14:22 (+11)``."""
    groups: dict[tuple, list[dict]] = {}
    for d in dims:
        code = ":" in d["key"] and not d["key"].startswith("get_inputs:")
        groups.setdefault((d["role"], d["original"], d["adapted"], d["note"]) if code else (d["key"],), []).append(d)
    return [{**g[0], "key": g[0]["key"] + (f" (+{len(g) - 1})" if len(g) > 1 else "")} for g in groups.values()]


def _row(root: Path, task_id: str) -> dict:
    path = root / "manifest.parquet"
    if not path.is_file():
        raise BuildError(f"{path}: not found (is {root} a benchmark build?)")
    rows = [r for r in read_table(path).to_pylist() if r["task_id"] == task_id]
    if not rows:
        raise BuildError(f"{path}: task_id {task_id!r} not in this build")
    return rows[0]


def _measurement(root: Path, task_id: str) -> dict:
    path = root / "measurements.parquet"
    if not path.is_file():
        return {}
    rows = [r for r in read_table(path).to_pylist() if r["task_id"] == task_id]
    return rows[0] if rows else {}

