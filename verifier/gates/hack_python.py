"""Static policy on the candidate's Python AST: a registry of small named checks.

Each check takes a :class:`PyContext` and yields :class:`Finding` s; the comment on each names the
exploit it catches (research/verifier.md §2.2 ids). Aliases are resolved: ``import torch as t``,
``from torch import nn``, ``import torch.nn.functional as F``, ``getattr`` on modules is forbidden.
Static checks are the cheap first net; the runtime integrity checks decide.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Iterator

from verifier.native_sources import loader_names


@dataclass(frozen=True)
class Finding:
    check: str
    message: str
    line: int = 0

    def line_text(self) -> str:
        return f"{self.check} (line {self.line}): {self.message}" if self.line else f"{self.check}: {self.message}"


ALLOWED_IMPORTS = {"torch", "torch.nn", "torch.nn.functional", "math", "typing", "__future__",
                   "verifier.cpu_native", "torch.utils.cpp_extension", "torch.utils", "functools",
                   "dataclasses"}
ALLOWED_FROM_NAMES = {"verifier.cpu_native": {"load_c"}, "torch.utils.cpp_extension": {"load_inline"},
                      "torch.utils": {"cpp_extension"}}
# torch.* functions allowed outside __init__: allocation, dtype/device objects, grad-mode managers.
TORCH_ALLOWED = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
                 "full", "full_like", "tensor", "as_strided", "Size", "Tensor", "device", "dtype",
                 "no_grad", "inference_mode", "is_tensor", "float32", "float64", "float16",
                 "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool", "long", "float",
                 "half", "double", "int", "contiguous_format", "strided", "finfo", "iinfo", "nn",
                 "utils"}
# Tensor methods that compute (A1): a static tripwire; the dispatch trace is the authority.
TENSOR_COMPUTE = set("""abs absolute acos add addbmm addcdiv addcmul addmm addmv all amax amin any argmax
argmin argsort asin atan atan2 baddbmm bmm ceil clamp clamp_max clamp_min clip cos cosh cross cummax
cummin cumprod cumsum diag div divide dot einsum eq erf erfc exp exp2 expm1 flip floor fmod frac ge
gather gelu gt hardtanh index_add index_select inner kron le lerp lgamma log log10 log1p log2 logaddexp
logical_and logical_not logical_or logsumexp lt masked_fill masked_scatter masked_select matmul max
maximum mean median min minimum mm mode mul multiply mv nan_to_num nanmean nansum ne neg negative norm
outer pow prod reciprocal relu remainder renorm repeat repeat_interleave roll rot90 round rsqrt
scatter scatter_add sigmoid sign signbit sin sinh softmax log_softmax sort sqrt square std sub
subtract sum tan tanh topk trace tril triu trunc var where xlogy addr cov count_nonzero diff
histc kthvalue logcumsumexp nanmedian quantile silu mish softplus hardswish hardsigmoid elu selu
celu leaky_relu logit sinc true_divide floor_divide bitwise_and bitwise_or bitwise_xor conv2d""".split())
FORBIDDEN_BUILTINS = {"exec", "eval", "compile", "__import__", "open", "getattr", "setattr", "delattr",
                      "globals", "locals", "vars", "breakpoint", "input", "id", "hash", "memoryview",
                      "exit", "quit", "help", "dir"}
FORBIDDEN_DUNDERS = {"__class__", "__dict__", "__globals__", "__builtins__", "__subclasses__", "__code__",
                     "__closure__", "__getattribute__", "__mro__", "__bases__", "__import__", "__loader__",
                     "__spec__", "__torch_function__", "__torch_dispatch__", "__reduce__", "__setattr__",
                     "__func__", "__self__", "__wrapped__", "__defaults__", "__kwdefaults__", "__module__"}
STATE_CHANGERS = {"set_num_threads", "set_num_interop_threads", "set_default_dtype", "set_default_tensor_type",
                  "set_flush_denormal", "use_deterministic_algorithms", "manual_seed", "seed", "Generator",
                  "set_rng_state", "set_default_device", "set_float32_matmul_precision", "set_printoptions",
                  "compile", "jit", "library", "ops", "_C", "_dynamo", "overrides", "_ops", "_refs",
                  "_prims", "fx", "autograd", "profiler", "cuda", "backends", "hub", "multiprocessing"}
RNG = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
       "bernoulli", "multinomial", "poisson", "uniform_", "normal_", "random_", "exponential_", "bernoulli_"}


@dataclass
class PyContext:
    tree: ast.Module
    task_dtype: str = "float32"
    torch_aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted module
    native_receivers: set[str] = field(default_factory=set)  # names/self attrs bound to loader results
    extra_imports: frozenset[str] = frozenset()  # the backend's kernel language (triton), see Backend
    kernels: set[int] = field(default_factory=set)  # ids of kernel-language function defs (@triton.jit)

    @classmethod
    def build(cls, source: str, task_dtype: str = "float32", extra_imports: frozenset[str] = frozenset()) -> "PyContext":
        ctx = cls(ast.parse(source), task_dtype, extra_imports=frozenset(extra_imports))
        ctx.kernels = _kernel_defs(ctx.tree, ctx.extra_imports)
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "torch":
                        ctx.torch_aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else "torch"
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "torch":
                for a in node.names:
                    ctx.torch_aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        loaders = set(loader_names(ctx.tree)) | {"torch.utils.cpp_extension.load_inline"}
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and dotted(node.value.func) in loaders:
                ctx.native_receivers.update(dotted(t) for t in node.targets)
        return ctx

    def resolve(self, node: ast.expr) -> str:
        """Dotted name with torch aliases expanded: F.relu -> torch.nn.functional.relu."""
        name = dotted(node)
        head, _, rest = name.partition(".")
        if head in self.torch_aliases:
            return self.torch_aliases[head] + ("." + rest if rest else "")
        return name


def dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(dotted(node.func) + "()")
    else:
        parts.append("?")
    return ".".join(reversed(parts))


def _functions_outside_init(tree: ast.Module, kernels: set[int] = frozenset()) -> Iterator[ast.AST]:
    """Function bodies that run per call: every def except __init__ (and module-level code), less
    the given kernel-language defs (their tl.* calls compile to the kernel, not to torch)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and getattr(node, "name", "") != "__init__" \
                and id(node) not in kernels:
            yield node


def _kernel_defs(tree: ast.Module, extra_imports: frozenset[str]) -> set[int]:
    """Top-level defs decorated from an allowed kernel-language module (@triton.jit, @triton.autotune)."""
    roots = {name.split(".")[0] for name in extra_imports}
    aliases = {a.asname or a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for a in node.names if a.name.split(".")[0] in roots}
    found = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.decorator_list and all(
                dotted(d.func if isinstance(d, ast.Call) else d).split(".")[0] in aliases for d in node.decorator_list):
            found.add(id(node))
    return found


Check = Callable[[PyContext], Iterator[Finding]]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[name] = fn
        return fn
    return register


@check("imports")
def _imports(ctx: PyContext) -> Iterator[Finding]:
    # D6/C2/C4/D4/B6: os, subprocess, threading, socket, ctypes, time, inspect, gc, numpy... give
    # processes, threads, timers, files, introspection or a non-native compute path.
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in ALLOWED_IMPORTS and a.name not in ctx.extra_imports:
                    yield Finding("imports", f"import of {a.name!r} is not allowed", node.lineno)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module in ctx.extra_imports and not node.level:
                continue
            if node.level or module not in ALLOWED_IMPORTS:
                yield Finding("imports", f"import from {module or '.'!r} is not allowed", node.lineno)
            elif module in ALLOWED_FROM_NAMES:
                bad = [a.name for a in node.names if a.name not in ALLOWED_FROM_NAMES[module]]
                if bad:
                    yield Finding("imports", f"from {module} import {bad[0]} is not allowed", node.lineno)


@check("no_try_fallback")
def _no_try(ctx: PyContext) -> Iterator[Finding]:
    # A4: try/except around the kernel falls back to torch when the native path raises.
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            yield Finding("no_try_fallback", "try/except is not allowed (no fallback paths)", node.lineno)


@check("no_reference_reuse")
def _no_reference(ctx: PyContext) -> Iterator[Finding]:
    # A5: `class ModelNew(Model): pass` or calling the reference Model.
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name) and node.id in ("Model", "get_inputs", "get_init_inputs"):
            yield Finding("no_reference_reuse", f"the reference name {node.id!r} must not be used", node.lineno)


@check("forbidden_builtins")
def _builtins(ctx: PyContext) -> Iterator[Finding]:
    # C4/D1/D4/B2/B6: exec/eval/getattr-obfuscation, open(), id()-keyed caches, introspection.
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_BUILTINS:
            yield Finding("forbidden_builtins", f"{node.func.id}() is not allowed", node.lineno)


@check("introspection")
def _introspection(ctx: PyContext) -> Iterator[Finding]:
    # B6/C4/D1: frame and object introspection (__globals__, __subclasses__, __dict__...).
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_DUNDERS:
            yield Finding("introspection", f"attribute {node.attr} is not allowed", node.lineno)
        if isinstance(node, ast.Attribute) and node.attr in ("data_ptr", "_version", "untyped_storage",
                                                             "storage", "_cdata"):
            yield Finding("introspection", f".{node.attr} (pointer/version-keyed caching) is not allowed; "
                          "pass tensors to load_c functions directly", node.lineno)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            yield Finding("introspection", "global/nonlocal state is not allowed (call-count tricks)", node.lineno)


@check("patching")
def _patching(ctx: PyContext) -> Iterator[Finding]:
    # D1/C4: torch.relu = ..., nn.Module.__call__ = ..., F.x = ... (reference or timer patching).
    for node in ast.walk(ctx.tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            base = target
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(target, (ast.Attribute, ast.Subscript)) and isinstance(base, ast.Name) \
                    and base.id in ctx.torch_aliases:
                yield Finding("patching", f"assignment to {dotted(target)} (patching torch) is not allowed", node.lineno)


@check("tensor_subclass")
def _subclass(ctx: PyContext) -> Iterator[Finding]:
    # C3: lazy tensor subclasses / proxies computing on first read.
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.ClassDef):
            for b in node.bases:
                if ctx.resolve(b) in ("torch.Tensor", "torch._C.TensorBase", "torch.Tensor._make_subclass"):
                    yield Finding("tensor_subclass", f"class {node.name} subclasses torch.Tensor", node.lineno)


@check("global_state")
def _global_state(ctx: PyContext) -> Iterator[Finding]:
    # C7/A13: thread counts, default dtype, seeds, backend flags, torch internals (_C, ops, jit).
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Attribute):
            name = ctx.resolve(node)
            parts = name.split(".")
            if parts[0] == "torch" and len(parts) > 1 and parts[1] in STATE_CHANGERS:
                yield Finding("global_state", f"{name} is not allowed (global state, internals or RNG seeding)", node.lineno)


@check("rng_outside_init")
def _rng(ctx: PyContext) -> Iterator[Finding]:
    # A13: random numbers in forward (precompute/seed games); __init__ may create parameters.
    for fn in _functions_outside_init(ctx.tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RNG:
                yield Finding("rng_outside_init", f"random numbers ({node.func.attr}) outside __init__", node.lineno)


@check("torch_compute_in_forward")
def _torch_compute(ctx: PyContext) -> Iterator[Finding]:
    # A1/A3: forward calls torch/F compute ops, nn modules, or compute tensor methods.
    for fn in _functions_outside_init(ctx.tree, ctx.kernels):
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            finding = _classify_call(ctx, node)
            if finding:
                yield Finding("torch_compute_in_forward", finding, node.lineno)


def _classify_call(ctx: PyContext, node: ast.Call) -> str:
    func = node.func
    name = ctx.resolve(func)
    receiver = dotted(func.value) if isinstance(func, ast.Attribute) else ""
    if receiver in ctx.native_receivers:
        return ""
    parts = name.split(".")
    if parts[0] == "torch":
        if len(parts) == 2 and parts[1] in TORCH_ALLOWED:
            return ""
        if name.startswith("torch.nn.Parameter") or name.startswith("torch.Size"):
            return ""
        return f"{name}() computes with torch (only allocation, views and copies are allowed in forward)"
    if isinstance(func, ast.Attribute) and func.attr in TENSOR_COMPUTE and receiver != "self":
        return f".{func.attr}() computes with torch (only allocation, views and copies are allowed in forward)"
    return ""  # other calls (helpers of the candidate, allowed tensor methods) are checked elsewhere


@check("nn_module_called")
def _nn_called(ctx: PyContext) -> Iterator[Finding]:
    # A1: parameter containers (nn.Linear, nn.Conv2d...) may be built in __init__ but not called.
    modules = set()
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            name = ctx.resolve(node.value.func)
            if name.startswith("torch.nn.") and name.split(".")[2][:1].isupper() and not name.startswith(
                    ("torch.nn.Parameter", "torch.nn.ParameterList", "torch.nn.ParameterDict")):
                modules.update(dotted(t) for t in node.targets)
    for fn in _functions_outside_init(ctx.tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and dotted(node.func) in modules:
                yield Finding("nn_module_called", f"{dotted(node.func)}(...) calls a torch module in forward", node.lineno)


def run_python_checks(source: str, task_dtype: str = "float32", disabled: tuple[str, ...] = (),
                      extra_imports: frozenset[str] = frozenset()) -> list[Finding]:
    try:
        ctx = PyContext.build(source, task_dtype, extra_imports)
    except SyntaxError:
        return []  # the compile gate reports syntax errors with their location
    findings = []
    for name, fn in CHECKS.items():
        if name not in disabled:
            findings.extend(fn(ctx))
    return findings
