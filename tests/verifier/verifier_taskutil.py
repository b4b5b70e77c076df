"""Build TaskSpec objects straight from small problem sources (no benchmark build needed)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from kernelbench_npu.spec import TaskSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernels"
TASKS = FIXTURES / "tasks"


def make_task(source: str, task_id: str = "T/test", tmp_dir: Path | None = None, dtype: str = "float32",
              atol: float = 1e-4, rtol: float = 1e-4) -> TaskSpec:
    path = (tmp_dir or TASKS) / f"{task_id.replace('/', '_')}.py"
    if tmp_dir is not None:
        path.write_text(source)
    return TaskSpec(task_id=task_id, level=1, category="test", name=task_id.split("/")[-1], variant="cpu",
                    dtype=dtype, source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(),
                    atol=atol, rtol=rtol, original_shapes=json.dumps({}), adapted_shapes=json.dumps({}),
                    lint_status="ok", lint_reason=None, reference_ms=None, problem_path=path)


def fixture_task(name: str) -> TaskSpec:
    """A task from tests/fixtures/kernels/tasks/<name>.py (a "# tolerance: X" line sets atol=rtol)."""
    source = (TASKS / f"{name}.py").read_text()
    match = re.search(r"^# tolerance: (\S+)$", source, re.M)
    tol = float(match.group(1)) if match else 1e-4
    return make_task(source, task_id=f"fixture/{name}", atol=tol, rtol=tol)
