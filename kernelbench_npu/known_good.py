"""Known-good solutions shipped next to the bundled problems (gpu-mode reference-kernels' habit:
a solution that is known to pass doubles as a test of the verifier and as demo material).

Layout: ``kernelbench_npu/solutions/<backend>/level<N>/<problem stem>.py``, one candidate file per
bundled problem ``kernelbench_npu/problems/level<N>/<problem stem>.py``, in the backend's candidate
format. The files are data: they are handed to the verifier as text and never imported here.

A solution is written for the problem's original sizes. A size profile may also shrink layer widths
written in the model's code (a network's ``nn.Conv2d(3, 32, 5)``, see size_params), which a
candidate's ``ModelNew`` repeats: :func:`solution_for` carries those width changes over from the
adapted problem to the solution (equal widths shrink together, so original width -> new width is
one map), the way an LLM reading the adapted problem would write it.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernelbench_npu.size_params import Site, find_sites, rewrite

SOLUTIONS_DIR = Path(__file__).resolve().parent / "solutions"
PROBLEMS_DIR = Path(__file__).resolve().parent / "problems"  # the bundled problems the solutions solve
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


class SolutionMismatch(ValueError):
    """The adapted problem's layer widths cannot be carried over to the solution."""


def _width_sites(source: str) -> list[Site]:
    # layer widths in code are keyed "Owner.method:LINE:COL"; get_inputs literals are the task's inputs
    return [site for site in find_sites(source) if ":" in site.key and not site.key.startswith("get_inputs:")]


def width_changes(original_source: str, adapted_source: str) -> dict[int, int]:
    """{original width: adapted width} of the layer widths a size profile changed in the model's code."""
    before, after = _width_sites(original_source), _width_sites(adapted_source)
    if [s.role for s in before] != [s.role for s in after]:
        raise SolutionMismatch("the adapted problem's layer widths do not line up with the original's")
    changes: dict[int, int] = {}
    for old, new in zip(before, after):
        if old.value != new.value and changes.setdefault(old.value, new.value) != new.value:
            raise SolutionMismatch(f"width {old.value} became both {changes[old.value]} and {new.value}")
    return changes


def solution_for(task_id: str, adapted_source: str, backend: str = "cpu") -> str | None:
    """The known-good solution of ``task_id`` at the adapted problem's layer widths (None: no solution)."""
    path = solution_path(task_id, backend)
    if path is None:
        return None
    source = path.read_text()
    original = PROBLEMS_DIR / path.parent.name / path.name
    changes = width_changes(original.read_text(), adapted_source)
    if not changes:
        return source
    sites = tuple(_width_sites(source))
    return rewrite(source, sites, {site.key: changes[site.value] for site in sites if site.value in changes})
