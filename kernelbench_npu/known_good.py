"""Known-good solutions shipped next to the bundled problems (gpu-mode reference-kernels' habit:
a solution that is known to pass doubles as a test of the verifier and as demo material).

Layout: ``kernelbench_npu/solutions/<backend>/level<N>/<problem stem>.py``, one candidate file per
bundled problem ``kernelbench_npu/problems/level<N>/<problem stem>.py``, in the backend's candidate
format. The files are data: they are handed to the verifier as text and never imported here.
"""

from __future__ import annotations

import re
from pathlib import Path

SOLUTIONS_DIR = Path(__file__).resolve().parent / "solutions"
_BUNDLED_ID = re.compile(r"L(\d+)/([A-Za-z0-9_]+)")  # bundled ids only: no "KB-" prefix, no "@fp16" variant


def solution_path(task_id: str, backend: str = "cpu") -> Path | None:
    """The known-good solution of a bundled task (e.g. "L1/001_relu"), or None if there is none.

    Dtype variants ("L1/001_relu@fp16") and tasks from other sources ("KB-L1/19_ReLU") have none:
    the shipped solutions are float32 kernels for the bundled problems."""
    match = _BUNDLED_ID.fullmatch(task_id)
    if match is None:
        return None
    path = SOLUTIONS_DIR / backend / f"level{match.group(1)}" / f"{match.group(2)}.py"
    return path if path.is_file() else None


def solution_source(task_id: str, backend: str = "cpu") -> str | None:
    path = solution_path(task_id, backend)
    return path.read_text() if path else None


def known_good(backend: str = "cpu") -> dict[str, Path]:
    """Every shipped solution of a backend: {task id: path}, in task order."""
    root = SOLUTIONS_DIR / backend
    found = {}
    for path in sorted(root.glob("level*/*.py")):
        found[f"L{path.parent.name.removeprefix('level')}/{path.stem}"] = path
    return found
