"""Ahead-of-time compilation of a Triton candidate's kernels for a GPU target, without a GPU.

``triton.compile`` needs each kernel's signature (pointer / scalar types) and constexpr values,
which only a launch provides. They are inferred statically instead: constexprs from the launch
site's keywords and literals, module constants, defaults, or the first ``@triton.autotune``
config; pointers are the bases of ``tl.load`` / ``tl.store`` address expressions (followed
through assignments) or parameters named ``*ptr*``; other scalars are i32, or fp32 when passed a
float literal or named like one (eps, alpha, scale...). A kernel whose constexpr cannot be
inferred is reported as skipped, never failed: the interpreter still checks it.

Only launched kernels are compiled: a ``@triton.jit`` function that other jit functions call and
that is never launched (``kernel[grid](...)``) is a device function, compiled inside its callers.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifier.backends.pymodule import candidate_path, import_candidate
from verifier.backends.triton_import_slice import import_error, kernels_only_source

_POINTER_CALLS = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
                  "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor"}
_FLOAT_HINTS = ("eps", "alpha", "beta", "scale", "slope", "momentum", "threshold", "gamma", "margin",
                "lambd", "min_val", "max_val", "temperature", "dropout", "weight_decay", "lr", "value")
_SIZE_HINTS = ("BLOCK", "SIZE", "TILE", "GROUP", "NUM", "WIDTH")
FALLBACK_BLOCK = 128
# Shared memory per block available to a kernel, by compute capability major (bytes).
SHARED_LIMIT = {7: 98304, 8: 166912, 9: 232448, 10: 232448, 12: 101376}


@dataclass(frozen=True)
class KernelPlan:
    name: str
    signature: dict[str, str]
    constexprs: dict[str, Any]
    options: dict[str, Any]
    skipped: str = ""  # non-empty: not compiled, and why


@dataclass(frozen=True)
class KernelBuild:
    name: str
    ok: bool
    message: str  # compiler error (with Triton's caret) or a resource summary
    shared_bytes: int = 0
    skipped: bool = False


def unwrap_jit(obj: Any) -> Any | None:
    """The JITFunction behind an autotune/heuristics wrapper, or None."""
    from triton.runtime.jit import JITFunction

    for _ in range(5):
        if isinstance(obj, JITFunction):
            return obj
        obj = getattr(obj, "fn", None)
        if obj is None:
            return None
    return None


def _pointer_names(fn_tree: ast.FunctionDef) -> set[str]:
    assigned = {t.id: node.value for node in ast.walk(fn_tree) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    bases: set[str] = set()

    def base_of(expr: ast.expr, depth: int = 0) -> None:
        while isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            expr = expr.left
        if isinstance(expr, ast.Attribute):  # p.dtype.element_ty and friends
            while isinstance(expr, ast.Attribute):
                expr = expr.value
        if isinstance(expr, ast.Name):
            bases.add(expr.id)
            if expr.id in assigned and depth < 10:
                base_of(assigned[expr.id], depth + 1)

    for node in ast.walk(fn_tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in _POINTER_CALLS:
                target = node.args[0] if node.args else next(
                    (k.value for k in node.keywords if k.arg in ("pointer", "base", "ptr")), None)
                if target is not None:
                    base_of(target)
    return bases


def _literal(node: ast.expr | None, constants: dict[str, Any]) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        pass
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _launch_sites(module_tree: ast.Module, kernel_name: str) -> list[ast.Call]:
    return [n for n in ast.walk(module_tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
            and getattr(n.func.value, "id", getattr(n.func.value, "attr", None)) == kernel_name]


def plan_kernel(kernel_name: str, wrapper: Any, module_tree: ast.Module, constants: dict[str, Any],
                pointer_dtype: str = "fp32") -> KernelPlan:
    jit = unwrap_jit(wrapper)
    fn_tree = ast.parse(textwrap.dedent(inspect.getsource(jit.fn))).body[0]
    pointers = _pointer_names(fn_tree)
    defaults = {p.name: p.default for p in jit.params if p.default is not inspect.Parameter.empty}
    configs = getattr(wrapper, "configs", None) or []
    tuned = dict(configs[0].kwargs) if configs else {}
    sites = _launch_sites(module_tree, kernel_name)
    site = sites[0] if sites else None
    site_kw = {k.arg: k.value for k in site.keywords if k.arg} if site else {}
    site_pos = list(site.args) if site else []
    options = {k: _literal(site_kw.get(k), constants) for k in ("num_warps", "num_stages")}
    if configs:
        options.update({"num_warps": configs[0].num_warps, "num_stages": configs[0].num_stages})
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for index, param in enumerate(jit.params):
        arg = site_kw.get(param.name, site_pos[index] if index < len(site_pos) else None)
        if param.is_constexpr:
            value = tuned.get(param.name, _literal(arg, constants))
            value = defaults.get(param.name) if value is None else value
            if value is None and any(h in param.name.upper() for h in _SIZE_HINTS):
                value = FALLBACK_BLOCK  # computed at launch time (e.g. next_power_of_2(n))
            if value is None:
                return KernelPlan(kernel_name, {}, {}, {}, skipped=f"constexpr {param.name} is only known at launch")
            signature[param.name], constexprs[param.name] = "constexpr", value
        elif param.name in pointers or "ptr" in param.name.lower():
            signature[param.name] = f"*{pointer_dtype}"
        elif isinstance(_literal(arg, constants), float) or any(h in param.name.lower() for h in _FLOAT_HINTS):
            signature[param.name] = "fp32"
        else:
            signature[param.name] = "i32"
    return KernelPlan(kernel_name, signature, constexprs, {k: v for k, v in options.items() if v is not None})


def compile_plan(wrapper: Any, plan: KernelPlan, capability: int, warp_size: int = 32) -> KernelBuild:
    """AOT-compile one planned kernel to a cubin for cuda:<capability>."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if plan.skipped:
        return KernelBuild(plan.name, True, f"not AOT-compiled: {plan.skipped}", skipped=True)
    source = ASTSource(fn=unwrap_jit(wrapper), signature=plan.signature, constexprs=plan.constexprs)
    try:
        compiled = triton.compile(source, target=GPUTarget("cuda", capability, warp_size), options=plan.options)
    except Exception as exc:  # triton raises CompilationError, but also plain errors from its passes
        return KernelBuild(plan.name, False, compile_error_text(exc))
    shared = int(getattr(compiled.metadata, "shared", 0) or 0)
    limit = SHARED_LIMIT.get(capability // 10, 101376)
    if shared > limit:
        return KernelBuild(plan.name, False, f"out of resources: shared memory, required {shared} B, hardware "
                                             f"limit {limit} B: use smaller BLOCK sizes or fewer num_stages", shared)
    consts = ", ".join(f"{k}={v}" for k, v in plan.constexprs.items())
    return KernelBuild(plan.name, True, f"{plan.name}: cubin for sm_{capability} ({consts}), {shared} B shared", shared)


def compile_error_text(exc: BaseException) -> str:
    """Triton's error with the errors it chains: an error inside a device function is reported at
    the call in the kernel, with the device function's own error (and its caret) as the cause."""
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen and len(parts) < 4:
        seen.add(id(exc))
        text = f"{type(exc).__name__}: {exc}".strip()
        if not any(text.split(": ", 1)[-1] in part for part in parts):  # the innermost error repeats
            parts.append(text)
        exc = exc.__cause__ or exc.__context__
    return "\ncaused by ".join(parts)


def device_functions(module_tree: ast.Module, names: set[str]) -> dict[str, str]:
    """Jit functions called from another jit function and never launched: name -> first caller."""
    callers: dict[str, str] = {}
    for node in module_tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name in names):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in names:
                if call.func.id != node.name:
                    callers.setdefault(call.func.id, node.name)
    return {name: caller for name, caller in callers.items() if not _launch_sites(module_tree, name)}


def compile_candidate(module_tree: ast.Module, build_dir: Path, capability: int) -> dict[str, Any]:
    """Import the candidate's kernels (compiled mode) and AOT-compile each launched one.

    Returns {"ok": bool, "text": diagnostics or build summary} (JSON: verifier.backends.triton_build writes it).
    """
    source = kernels_only_source(module_tree)
    try:
        module = import_candidate(source, build_dir, "triton_aot")
    except Exception as exc:
        return {"ok": False, "text": import_error(exc, candidate_path(source, build_dir, "triton_aot"))}
    jitted = {name: obj for name, obj in vars(module).items()
              if unwrap_jit(obj) is not None and unwrap_jit(obj).fn.__module__ == module.__name__}
    if not jitted:
        return {"ok": False, "text": "no @triton.jit kernel defined in the candidate: ModelNew must launch "
                                     "Triton kernels (kernel[grid](...))"}
    helpers = device_functions(module_tree, set(jitted))
    constants = {k: v for k, v in vars(module).items() if isinstance(v, (int, float, bool))}
    builds = [compile_plan(obj, plan_kernel(name, obj, module_tree, constants), capability)
              for name, obj in jitted.items() if name not in helpers]
    failed = [b for b in builds if not b.ok]
    if failed:
        return {"ok": False, "text": "\n".join(f"kernel {b.name}: {b.message}" for b in failed)[:4000]}
    notes = [f"{name}: device function, compiled inside {caller}" for name, caller in helpers.items()]
    return {"ok": True, "text": "\n".join([b.message for b in builds] + notes)}
