"""What of a Triton candidate the AOT compile gate imports: the slice that defines its kernels.

The compile gate runs before the sandbox's seccomp filter, so it never executes the candidate's
other top-level code (ModelNew, helper calls, tensors built at import). It keeps what defining the
kernels needs and what runs nothing but Triton's own constructors:

- imports, and assignments of literal constants;
- decorated functions (the kernels, with their ``@triton.jit`` / ``@triton.autotune`` decorators);
- plain functions whose defaults are literals (defining one runs no code: config generators and
  ``early_config_prune`` callbacks that a decorator names);
- config tables: assignments whose only calls are ``triton.Config`` (however triton was imported),
  pure builtins (``range``, ``zip``, ``min``...) and ``itertools`` combinators outside lambdas, e.g.
  ``configs = [triton.Config({"BLOCK": b}, num_warps=w) for b, w in itertools.product((64, 128), (2, 4))]``.

It runs in the monitor's confined builder (verifier.backends.triton_build), never in the runner.
"""

from __future__ import annotations

import ast
import traceback
from pathlib import Path

CONFIG_CALLS = frozenset({"triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config", "range",
                          "zip", "enumerate", "list", "tuple", "len", "min", "max", "sorted", "reversed",
                          "itertools.product", "itertools.chain", "itertools.combinations", "itertools.permutations"})
PURE_BUILTINS = frozenset({"range", "zip", "enumerate", "list", "tuple", "len", "min", "max", "sorted", "reversed"})


def kernels_only_source(module_tree: ast.Module) -> str:
    """The candidate reduced to the slice above, as source."""
    triton_names = _triton_names(module_tree)
    keep = [node for node in module_tree.body if _kept(node, triton_names)]
    return ast.unparse(ast.Module(body=keep, type_ignores=[])) + "\n"


def _kept(node: ast.stmt, triton_names: dict[str, str]) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, ast.FunctionDef):
        defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        return bool(node.decorator_list) or all(_is_literal(d) for d in defaults)
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return _is_literal(node.value) or _only_triton_calls(node.value, triton_names)
    return False


def _triton_names(module_tree: ast.Module) -> dict[str, str]:
    """Module-level names bound by triton (and itertools) imports -> the dotted name they stand for."""
    names: dict[str, str] = {}
    for node in module_tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("triton", "itertools"):
                    local = alias.asname or alias.name.split(".")[0]
                    names[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("triton", "itertools") \
                and not node.level:
            names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    return names


def _only_triton_calls(value: ast.expr, triton_names: dict[str, str]) -> bool:
    calls = [n for n in _walk_outside_lambdas(value) if isinstance(n, ast.Call)]
    return bool(calls) and all(_dotted(c.func, triton_names) in CONFIG_CALLS for c in calls)


def _walk_outside_lambdas(node: ast.AST):
    """ast.walk without lambda bodies (a ``pre_hook=lambda args: ...`` runs only at launch)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.Lambda):
            yield from _walk_outside_lambdas(child)


def _dotted(func: ast.expr, triton_names: dict[str, str]) -> str:
    """The call's target as a dotted name with import aliases resolved ("" if not a plain name chain)."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return ""
    root = triton_names.get(func.id, func.id if func.id in PURE_BUILTINS else "")
    return ".".join([root, *reversed(parts)]) if root else ""


def _is_literal(node: ast.expr | None) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, SyntaxError, TypeError):
        return False


def import_error(exc: BaseException, module_path: Path) -> str:
    """Why importing the slice failed, with the failing lines of the slice (what the LLM can act on)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(module_path)]
    where = "".join(f"  {(f.line or '').strip()}\n" for f in frames[-3:])
    return (f"importing the candidate's kernels failed (the compile gate imports only imports, constants, "
            f"functions and triton.Config tables, never other top-level code):\n{where}"
            f"{type(exc).__name__}: {exc}")[:2000]
