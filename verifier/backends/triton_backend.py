"""The ``triton`` backend: ModelNew launching ``@triton.jit`` kernels (Triton is an optional extra).

With a GPU: kernels compile and run for real, timed with CUDA events after an L2 flush. Without
one: the compile gate compiles every kernel ahead of time for a GPU target (sm_90 unless
``TORCH_CUDA_ARCH_LIST`` says otherwise; Triton's bundled ptxas makes real cubins), and
correctness runs the kernels in the Triton interpreter (``TRITON_INTERPRET=1``) on CPU tensors;
latency is not measured (the interpreter's speed says nothing about the GPU's). The interpreter
runs the task on small shapes (see :mod:`verifier.backends.small_shapes`), reference and candidate
alike.

Sandbox policy: on a GPU, Triton JIT-compiles each kernel at its first launch and runs ptxas as a
subprocess, which the child's no-exec seccomp filter would kill (SIGSYS). The launch signature
(pointer alignment, ints equal to 1) is only known at the call, so no compile before the filter can
stand in for it; ``exec_after_load`` therefore asks the child to skip the filter for triton on a
GPU (the verdict's ``facts.seccomp_off_reason`` says so; the static hack gate still forbids
subprocess, os and sockets in the candidate, and the rlimits, process group and timeout stay).
Without a GPU the interpreter needs no exec and the filter stays on.
"""

from __future__ import annotations

import ast
import os
import time
import traceback
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Callable

from kernelbench_npu.spec import TaskSpec
from verifier.backends.base import Availability, Backend, CompileOutcome, GateCapability
from verifier.backends.cuda import target_arch
from verifier.backends.gpu_timing import cuda_event_timer, gpu_present
from verifier.backends.pymodule import import_candidate, model_new_class
from verifier.backends.scaffolds import read_scaffold
from verifier.backends.small_shapes import shrink_task_source
from verifier.backends.toolrun import trim_diagnostics

INSTALL_HINT = "pip install 'evokernel[triton]'"


def triton_version() -> str | None:
    if find_spec("triton") is None:
        return None
    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return "?"


def _bundled_ptxas() -> bool:
    spec = find_spec("triton")
    root = Path(spec.origin).parent if spec and spec.origin else None
    return bool(root and (root / "backends" / "nvidia" / "bin" / "ptxas").is_file())


def _capability() -> int:
    digits = target_arch().removeprefix("sm_").rstrip("abcdefghijklmnopqrstuvwxyz")
    return int(digits)


def kernels_only_source(module_tree: ast.Module) -> str:
    """The candidate reduced to imports, literal constants and decorated kernels.

    The compile gate runs before the sandbox's seccomp filter, so it never executes the
    candidate's other top-level code (ModelNew, helper calls): only what Triton must import.
    """
    keep = []
    for node in module_tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            keep.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_literal(node.value):
            keep.append(node)
        elif isinstance(node, ast.FunctionDef) and node.decorator_list:
            keep.append(node)
    return ast.unparse(ast.Module(body=keep, type_ignores=[])) + "\n"


def _is_literal(node: ast.expr | None) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, SyntaxError, TypeError):
        return False


def set_interpreter(enabled: bool) -> None:
    """TRITON_INTERPRET decides, at decoration time, whether @triton.jit builds an interpreted kernel."""
    os.environ["TRITON_INTERPRET"] = "1" if enabled else "0"


def count_launches() -> None:
    """Count every Triton kernel launch (compiled or interpreted) as a native call, for the runtime
    integrity check "forward made no native call". Installed before the integrity snapshot."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    from verifier import cpu_native

    for cls in (JITFunction, InterpretedFunction):
        run = cls.run
        if getattr(run, "_evokernel_counted", False):
            continue

        def counted(self, *args, _run=run, **kwargs):
            if not kwargs.get("warmup"):
                cpu_native.CALLS[0] += 1
            return _run(self, *args, **kwargs)

        counted._evokernel_counted = True
        cls.run = counted


class TritonBackend(Backend):
    name = "triton"
    static_imports = frozenset({"triton", "triton.language"})

    def availability(self) -> Availability:
        version = triton_version()
        if version is None:
            gates = tuple(GateCapability(g, False, "triton not installed") for g in ("compile", "correctness", "latency"))
            return Availability(self.name, False, f"triton is not installed ({INSTALL_HINT})", gates)
        present, gpu = gpu_present()
        arch = target_arch()
        compile_note = f"triton {version}, " + (f"JIT for {arch}" if present else f"AOT for {arch}")
        gates = (GateCapability("compile", present or _bundled_ptxas(), compile_note),
                 GateCapability("correctness", True, f"GPU {gpu}" if present else "interpreter, small shapes"),
                 GateCapability("latency", present, "CUDA events" if present else "no GPU"))
        if not present:
            return Availability(self.name, False, gpu, gates)
        return Availability(self.name, True, f"{gpu}, triton {version}", gates)

    def scaffold(self, task: TaskSpec | None = None) -> str:
        return read_scaffold("triton", task)

    def precheck(self, candidate_source: str) -> str:
        try:
            tree = ast.parse(candidate_source)
        except SyntaxError as exc:
            return f"line {exc.lineno}: Python syntax error: {exc.msg}"
        jit = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
               and any("jit" in ast.unparse(d) for d in n.decorator_list)]
        return "" if jit else "no @triton.jit kernel defined in the candidate: ModelNew must launch Triton kernels"

    def compile(self, candidate_source: str, build_dir: Path, timeout_s: float) -> CompileOutcome:
        start = time.perf_counter()

        def outcome(ok: bool, text: str) -> CompileOutcome:
            return CompileOutcome(ok, text, time.perf_counter() - start)

        try:
            module_tree = ast.parse(candidate_source)
        except SyntaxError as exc:
            return outcome(False, f"line {exc.lineno}: Python syntax error: {exc.msg}")
        if triton_version() is None:
            return outcome(False, f"triton: not installed on the verifier ({INSTALL_HINT})")
        from verifier.backends.triton_aot import compile_plan, plan_kernel, unwrap_jit

        set_interpreter(False)
        try:
            module = import_candidate(kernels_only_source(module_tree), build_dir, "triton_aot")
        except Exception:
            return outcome(False, "importing the candidate failed:\n" + trim_diagnostics(
                traceback.format_exc(limit=-3), strip_prefixes=(str(build_dir),)))
        kernels = {name: obj for name, obj in vars(module).items()
                   if unwrap_jit(obj) is not None and unwrap_jit(obj).fn.__module__ == module.__name__}
        if not kernels:
            return outcome(False, "no @triton.jit kernel defined in the candidate: ModelNew must launch "
                                  "Triton kernels (kernel[grid](...))")
        constants = {k: v for k, v in vars(module).items() if isinstance(v, (int, float, bool))}
        builds = [compile_plan(obj, plan_kernel(name, obj, module_tree, constants), _capability())
                  for name, obj in kernels.items()]
        failed = [b for b in builds if not b.ok]
        if failed:
            return outcome(False, "\n".join(f"kernel {b.name}: {b.message}" for b in failed)[:4000])
        return outcome(True, "\n".join(b.message for b in builds))

    def load(self, candidate_source: str, build_dir: Path) -> type:
        if triton_version() is None:
            raise RuntimeError(f"triton: not installed ({INSTALL_HINT})")
        present, _ = gpu_present()
        set_interpreter(not present)
        return model_new_class(import_candidate(candidate_source, build_dir, "triton"), self.name)

    def correctness_task_source(self, task_source: str) -> str:
        return task_source if gpu_present()[0] else shrink_task_source(task_source)

    def before_sandbox(self) -> None:
        set_interpreter(not gpu_present()[0])
        count_launches()

    def exec_after_load(self) -> str:
        return "triton JIT-compiles kernels with ptxas at first launch" if gpu_present()[0] else ""

    def device(self) -> str:
        return "cuda" if gpu_present()[0] else "cpu"

    def synchronize(self) -> None:
        if gpu_present()[0]:
            import torch

            torch.cuda.synchronize()

    def timer(self) -> Callable[[Callable[[], Any]], float]:
        if gpu_present()[0]:
            return cuda_event_timer()
        return super().timer()  # interpreter timings: not meaningful, reported as "latency no"
