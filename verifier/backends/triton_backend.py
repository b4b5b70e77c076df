"""The ``triton`` backend: ModelNew launching ``@triton.jit`` kernels (Triton is an optional extra).

With a GPU: kernels compile and run for real in the runner (Triton JIT-compiles at the first launch,
with ptxas: the runner's no-exec seccomp filter stays off, and the verdict says so), timed by the
monitor. Without one: the compile gate compiles every kernel ahead of time for a GPU target (sm_90
unless ``TORCH_CUDA_ARCH_LIST`` says otherwise; Triton's bundled ptxas makes real cubins) in the
confined builder (verifier.backends.triton_build), and correctness runs the kernels in the Triton
interpreter (``TRITON_INTERPRET=1``) in the runner, on small shapes (see
:mod:`verifier.backends.small_shapes`), reference and candidate alike; latency is not measured (the
interpreter's speed says nothing about the GPU's). ``@triton.autotune`` is not benchmarked there: each
new input takes the next config and the correctness gate says which ran.
"""

from __future__ import annotations

import ast
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier.backends.base import Availability, Backend, BuildJob, GateCapability
from verifier.backends.cuda import target_arch
from verifier.backends.gpu_timing import gpu_present
from verifier.backends.pymodule import import_candidate, model_new_class
from verifier.backends.scaffolds import read_scaffold
from verifier.backends.small_shapes import shrink_task_source
from verifier.backends.triton_build import aot_job, judge
from verifier.backends.triton_import_slice import kernels_only_source
from verifier.backends.triton_modes import autotune_report, rotate_autotune_configs, turn_per_input, use_mode

__all__ = ["TritonBackend", "kernels_only_source", "triton_version"]

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


def set_interpreter(enabled: bool) -> None:
    """Fix this process's triton mode (see :func:`verifier.backends.triton_modes.use_mode`)."""
    use_mode(enabled)


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
            missing = f"triton is not installed ({INSTALL_HINT})"
            gates = tuple(GateCapability(g, False, missing) for g in ("compile", "correctness", "latency"))
            return Availability(self.name, False, f"triton is not installed ({INSTALL_HINT})", gates)
        present, gpu = gpu_present()
        arch = target_arch()
        compiles = present or _bundled_ptxas()
        compile_note = (f"triton {version}, " + (f"JIT for {arch}" if present else f"AOT for {arch}") if compiles else
                        f"triton {version} has no bundled ptxas for its ahead-of-time compile without a GPU "
                        f"(reinstall it: {INSTALL_HINT})")
        gates = (GateCapability("compile", compiles, compile_note),
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

    def compile_jobs(self, candidate_source: str, context: dict[str, str]) -> tuple[BuildJob, ...]:
        if gpu_present()[0] or triton_version() is None:
            return ()  # on a GPU, Triton compiles each kernel at its first launch in the runner
        return (aot_job(candidate_source, _capability(), triton_version() or "?", ()),)

    def judge_build(self, job: BuildJob, code: int, output: str, records: dict[str, bytes],
                    context: dict[str, str]) -> tuple[bool, str]:
        ok, text = judge(code, output, records)
        return ok, ("; ".join(line.strip() for line in text.splitlines()[:6])[:300] if ok else text)

    def load(self, candidate_source: str, workdir: str) -> type:
        if triton_version() is None:
            raise RuntimeError(f"triton: not installed ({INSTALL_HINT})")
        present, _ = gpu_present()
        set_interpreter(not present)
        model_cls = model_new_class(import_candidate(candidate_source, Path(workdir), "triton"), self.name)
        return model_cls if present else turn_per_input(model_cls)  # autotune: a config per input

    def correctness_task_source(self, task_source: str) -> str:
        return task_source if gpu_present()[0] else shrink_task_source(task_source)

    def before_sandbox(self) -> None:
        interpret = not gpu_present()[0]
        set_interpreter(interpret)
        count_launches()
        if interpret:
            rotate_autotune_configs()

    def runtime_note(self) -> str:
        return autotune_report()

    def exec_after_load(self) -> str:
        return "triton JIT-compiles kernels with ptxas at first launch" if gpu_present()[0] else ""

    def device(self) -> str:
        return "cuda" if gpu_present()[0] else "cpu"

    def synchronize(self) -> None:
        if gpu_present()[0]:
            import torch

            torch.cuda.synchronize()

    def flush_cache(self) -> None:
        """The GPU's L2 evicted before every window, untimed (the reference worker does the same)."""
        if gpu_present()[0]:
            from verifier.backends.device_sync import flusher

            flusher("cuda")()
