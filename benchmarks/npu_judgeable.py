"""How many of KernelBench's level-1 and level-2 tasks this machine can judge (compile and correctness)
in the NPU variants, before and after issue 25's change.

After (measured): a build made by ``evokernel build --backend triton-ascend`` (or ``ascendc``) now
checks every ok task's verification path on the build machine and records per gate whether it runs
here (``measurements.parquet``, ``gates_here``; the dry recording at the task's own sizes goes
through the real toolchain). A task counts when it is ok and both compile and correctness run.

Before (estimated from the cost model, since the old path would have to allocate the inputs):
- compile: the old recording materialised ``get_inputs()`` and ModelNew's parameters (and the
  outputs forward allocates) inside the sandbox's 6 GiB address-space limit, in a toolchain
  process that itself maps ~0.75 GiB: a task counts when inputs + output + parameters at the
  original sizes (meta-device footprint) fit in the remaining 5.25 GiB;
- correctness: the old interpreter shrink halved module-level integer literals above 256; a task
  counts when its footprint at those sizes is at most 16 MiB (one interpreted forward of an honest
  LayerNorm took 319 s on 256 MiB, ~0.2 M elements/s; the 120 s correctness budget covers about
  seven forwards, so ~17 s each, ~3.5 M elements).
The same 16 MiB rule is applied to the new interpreter sizes as a cross-check (the build's own
figure is the ``gates_here`` record).

Run: .venv/bin/python -m benchmarks.npu_judgeable --build runs/build-triton-ascend [--build runs/build-ascendc]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

GiB, MiB = 1 << 30, 1 << 20
SANDBOX_ADDRESS_SPACE = 6 * GiB
TOOLCHAIN_PROCESS = int(0.75 * GiB)
INTERPRETER_BYTES = 16 * MiB


def _footprint(source: str) -> int | None:
    from kernelbench_npu.cost import CostError, estimate_cost

    try:
        return estimate_cost(source).footprint_bytes
    except CostError:
        return None


def before(source: str) -> tuple[bool, bool]:
    """(compile, correctness) judgeable by the code before issue 25 (see the module docstring)."""
    from verifier.backends.small_shapes import shrink_task_source

    original = _footprint(source)
    shrunk = _footprint(shrink_task_source(source))
    compile_ok = original is not None and original <= SANDBOX_ADDRESS_SPACE - TOOLCHAIN_PROCESS
    return compile_ok, shrunk is not None and shrunk <= INTERPRETER_BYTES


def after(row: dict, gates: str | None) -> tuple[bool, bool, str]:
    """(compile, correctness, why not) from the build's record."""
    if row["lint_status"] != "ok":
        return False, False, f"quarantined: {(row['lint_reason'] or '')[:120]}"
    runs = {g["gate"]: g for g in json.loads(gates)} if gates else {}
    why = "; ".join(f"{g}: {runs[g]['note'][:100]}" for g in ("compile", "correctness") if g in runs and not runs[g]["runs"])
    return (runs.get("compile", {}).get("runs", False), runs.get("correctness", {}).get("runs", False),
            why or ("not checked (no gates_here)" if not runs else ""))


def count(build: Path) -> None:
    meta = json.loads((build / "build.json").read_text())
    rows = [r for r in pq.read_table(build / "manifest.parquet").to_pylist()
            if r["task_id"].startswith("KB-") and r["level"] in (1, 2) and "@" not in r["task_id"]]
    gates = {r["task_id"]: r.get("gates_here") for r in pq.read_table(build / "measurements.parquet").to_pylist()}
    tally: Counter = Counter()
    missing: list[str] = []
    for row in rows:
        source = (build / "problems" / row["problem_file"]).read_text()
        # ascendc: compiling needs CANN and running an NPU, before as after (the build now says so per task)
        b_compile, b_correct = before(source) if meta["backend"] == "triton-ascend" else (False, False)
        a_compile, a_correct, why = after(row, gates.get(row["task_id"]))
        level = f"L{row['level']}"
        tally.update({(level, "tasks"): 1, (level, "before compile"): b_compile, (level, "before correctness"): b_correct,
                      (level, "before both"): b_compile and b_correct, (level, "after compile"): a_compile,
                      (level, "after correctness"): a_correct, (level, "after both"): a_compile and a_correct})
        if not (a_compile and a_correct):
            missing.append(f"  {row['task_id']}: {why}")
    print(f"{meta['backend']} build {build} ({meta['build_hash'][:12]})")
    print(f"{'level':<6}{'tasks':>6}  {'before: compile':>16}{'correctness':>12}{'both':>6}  "
          f"{'after: compile':>15}{'correctness':>12}{'both':>6}")
    for level in ("L1", "L2", "all"):
        get = (lambda k: tally[("L1", k)] + tally[("L2", k)]) if level == "all" else (lambda k: tally[(level, k)])
        print(f"{level:<6}{get('tasks'):>6}  {get('before compile'):>16}{get('before correctness'):>12}"
              f"{get('before both'):>6}  {get('after compile'):>15}{get('after correctness'):>12}{get('after both'):>6}")
    if meta["backend"] == "triton-ascend":  # cross-check: the interpreter sizes under the same 16 MiB rule
        from verifier.backends.small_shapes import interpreter_fits

        fits = interpreter_fits([(build / "problems" / r["problem_file"]).read_text() for r in rows])
        sizes = sorted((f.get("footprint_bytes", 0), r["task_id"]) for f, r in zip(fits, rows))
        over = [task for size, task in sizes if size > INTERPRETER_BYTES]
        print(f"interpreter sizes: largest footprint {sizes[-1][0] / MiB:.2f} MiB ({sizes[-1][1]}), median "
              f"{sizes[len(sizes) // 2][0] / MiB:.2f} MiB; above 16 MiB: {len(over)} {over[:5]}")
    if missing:
        print(f"not judgeable here after the change ({len(missing)}):")
        print("\n".join(missing[:40]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, action="append", required=True, help="an NPU-variant build (repeatable)")
    for build in parser.parse_args().build:
        count(build)


if __name__ == "__main__":
    main()
