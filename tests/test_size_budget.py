"""The size budget of DESIGN.md's style section: modules of at most 400 lines, functions of at most
50, in the project's own packages (tests and benchmarks excepted)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cli", "evokernel", "kernelbench_npu", "verifier", "memory_lake", "reports", "tasks", "flows")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 50


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if "problems" not in p.parts and "solutions" not in p.parts)


def test_the_budget_sees_every_package():
    assert {p.relative_to(ROOT).parts[0] for p in _modules()} == set(PACKAGES)


def test_modules_stay_within_400_lines():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not long, "split by concept, one owner each:\n" + "\n".join(long)


def test_functions_stay_within_50_lines():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "name the steps as functions:\n" + "\n".join(long)
