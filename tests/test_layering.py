"""The dependency rules of DESIGN.md section 2, checked on the source and on real imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INTERNAL = {"evokernel", "kernelbench_npu", "verifier", "memory_lake", "reports", "tasks", "flows", "cli"}
ALLOWED = {
    "kernelbench_npu": set(),
    "memory_lake": set(),
    "verifier": {"kernelbench_npu"},
    "reports": {"memory_lake"},
    "evokernel": {"kernelbench_npu", "verifier", "memory_lake", "reports"},
    "tasks": INTERNAL - {"flows", "cli"},
    "flows": INTERNAL - {"cli"},
    "cli": INTERNAL,  # the composition root: the console script, above every other package
}
CORE = ("evokernel", "kernelbench_npu", "verifier", "memory_lake", "reports")
# Candidate files shipped as data (handed to the verifier as text, never imported by the package).
DATA_DIRS = (ROOT / "kernelbench_npu" / "solutions",)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_internal_imports_follow_the_rules(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        if any(path.is_relative_to(data) for data in DATA_DIRS):
            continue
        used = _imports(path)
        allowed = set(ALLOWED[package])
        for dep in (used & INTERNAL) - {package} - allowed:
            bad.append(f"{path.relative_to(ROOT)} imports {dep}")
        if package in CORE and "prefect" in used:
            bad.append(f"{path.relative_to(ROOT)} imports prefect (only tasks/ and flows/ may)")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", CORE)
def test_importing_a_core_package_does_not_import_prefect(package):
    code = (
        "import importlib, pkgutil, sys\n"
        f"pkg = importlib.import_module({package!r})\n"
        "for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(k for k in sys.modules if k == 'prefect' or k.startswith('prefect.'))\n"
        "assert not bad, bad[:3]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
