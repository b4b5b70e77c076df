"""Small shapes for correctness in an interpreter (triton and triton-ascend without their device).

The Triton interpreter runs every program instance in numpy, ~1000x slower than the device, so a
KernelBench-sized task (16 x 16384, 4096^2 matmuls) would time out. The task is shrunk at its
source, identically for the reference worker and the candidate. Two ways:

- :func:`interpreter_task_source` (triton-ascend): the build's ``interpreter`` size profile
  (:data:`kernelbench_npu.variants.INTERPRETER`, :func:`kernelbench_npu.sizing.fit_profile`). Every
  size site is found whatever its form (literals, constant expressions such as ``N = 2048 * 2``,
  tuple elements, ``get_inputs`` literals, layer widths), evaluated, and all sizes shrink together,
  the least-shrunk first, until the meta-device footprint (inputs, output, parameters) is about
  1 MiB and the estimate about 1 ms: by element count, not by constant, so LayerNorm
  16x64x256x256 (all constants <= 256, 256 MB) becomes 4x16x32x32. Dimensions keep their roles:
  shrink factors stay within 2x of each other (the reduced dimension stays the long one), tails
  and odd sizes stay (65535 -> 513, 393216 -> 3072 = 3 * 2^10), floors per role (GEMM >= 64,
  batch >= 2). The build lints the reference at exactly these sizes, so a task the build calls
  ok runs here. Computed once per task source in a subprocess (it executes the task on the meta
  device; the verifier's own process never imports torch) and cached under the verifier cache.
- :func:`shrink_task_source` (the triton backend): every module-level ``NAME = <int literal>``
  above :data:`SMALL_CAP` is halved while it stays even and above the cap (16384 -> 256). Faster
  but blind to expressions and to tasks whose constants are all small.

Only sizes change: the task's code, dtypes, tolerances and input distributions are the same.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SMALL_CAP = 256
SIZING_VERSION = "1"  # bump when fit_profile's answer for the same source would change
SIZING_TIMEOUT_S = 300.0  # torch import + the first meta dispatch take ~20 s on a loaded 2-core host


class SmallShapesError(RuntimeError):
    """The interpreter sizes could not be computed (one line)."""


def shrink_int(value: int, cap: int = SMALL_CAP) -> int:
    while value > cap and value % 2 == 0:
        value //= 2
    return value


def shrink_task_source(source: str, cap: int = SMALL_CAP) -> str:
    """The task source with its large module-level integer literals halved down towards cap."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source  # the reference worker reports it
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # (line, col, end_col, text), same-line literals only
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if (isinstance(value, ast.Constant) and type(value.value) is int and value.value > cap
                and value.lineno == value.end_lineno):
            small = shrink_int(value.value, cap)
            if small != value.value:
                edits.append((value.lineno - 1, value.col_offset, value.end_col_offset, str(small)))
    for line, col, end, text in sorted(edits, reverse=True):
        raw = lines[line].encode()
        lines[line] = (raw[:col] + text.encode() + raw[end:]).decode()
    return "".join(lines)


def cache_dir() -> Path:
    from verifier.settings import default_cache_dir

    return default_cache_dir() / "small-shapes"


def _cache_path(source: str) -> Path:
    return cache_dir() / (hashlib.sha256(f"{SIZING_VERSION}\0{source}".encode()).hexdigest() + ".json")


def _cached(source: str) -> dict | None:
    path = _cache_path(source)
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except ValueError:
        return None  # a torn write by a killed process: compute again


def _store(source: str, answer: dict) -> None:
    path = _cache_path(source)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(answer))
    os.replace(tmp, path)


def interpreter_fits(sources: list[str], timeout_s: float = SIZING_TIMEOUT_S) -> list[dict]:
    """For each source ``{"source", "note", "adapted", "input_shapes", "estimated_ms",
    "footprint_bytes"}`` at the interpreter sizes, or ``{"error": why}``; the missing ones computed in
    one subprocess, every answer cached by source."""
    answers = [_cached(s) for s in sources]
    missing = sorted({s for s, a in zip(sources, answers) if a is None})
    if missing:
        computed = dict(zip(missing, _compute(missing, timeout_s * max(1, len(missing) // 20 + 1))))
        for source, answer in computed.items():
            if "error" not in answer:
                _store(source, answer)
        answers = [a if a is not None else computed[s] for s, a in zip(sources, answers)]
    return answers


def interpreter_fit(source: str, timeout_s: float = SIZING_TIMEOUT_S) -> dict:
    """One task's :func:`interpreter_fits` answer; raises SmallShapesError when sizing fails."""
    answer = interpreter_fits([source], timeout_s)[0]
    if "error" in answer:
        raise SmallShapesError(f"sizing the task for the interpreter failed: {answer['error']}")
    return answer


def interpreter_task_source(source: str) -> str:
    """The task at the interpreter sizes (see the module docstring); the task unchanged when its
    source cannot be sized (the reference worker then reports what is wrong with it)."""
    try:
        return interpreter_fit(source)["source"]
    except SmallShapesError:
        return source if _unparsable(source) else shrink_task_source(source)


def _unparsable(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return True
    return False


def _compute(sources: list[str], timeout_s: float) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="evokernel-sizing-") as tmp:
        files = []
        for i, source in enumerate(sources):
            files.append(Path(tmp) / f"task{i}.py")
            files[-1].write_text(source)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        try:
            run = subprocess.run([sys.executable, "-m", "verifier.backends.small_shapes", *map(str, files)],
                                 capture_output=True, text=True, timeout=timeout_s, env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise SmallShapesError(f"sizing the task for the interpreter timed out after {timeout_s:.0f} s") from None
    answers = {}
    for line in run.stdout.splitlines():  # a problem file may print: only our tagged lines count
        if line.startswith(_TAG):
            index, answer = json.loads(line[len(_TAG):])
            answers[index] = answer
    if run.returncode != 0 and len(answers) < len(sources):
        tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise SmallShapesError(f"sizing the task for the interpreter failed: {tail[:200]}")
    return [answers.get(i, {"error": "no answer"}) for i in range(len(sources))]


_TAG = "evokernel-small-shapes "


def _main(argv: list[str]) -> int:
    """``python -m verifier.backends.small_shapes TASK.py...``: one tagged JSON line per task."""
    from kernelbench_npu.cost import CostError
    from kernelbench_npu.sizing import fit_profile
    from kernelbench_npu.variants import INTERPRETER

    for index, name in enumerate(argv[1:]):
        try:
            fit = fit_profile(Path(name).read_text(), INTERPRETER, "task.py")
            answer = {"source": fit.source, "note": fit.note, "adapted": fit.adapted,
                      "input_shapes": fit.cost.input_shapes, "estimated_ms": fit.cost.estimated_ms,
                      "footprint_bytes": fit.cost.footprint_bytes}
        except (CostError, SyntaxError) as exc:
            answer = {"error": str(exc)[:300]}
        sys.stdout.write(_TAG + json.dumps([index, answer]) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
