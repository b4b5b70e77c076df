"""The CPU backend: C++/OpenMP candidates built by the system compiler (the fast loader ``load_c``) or
by torch's ``load_inline``, loaded and called in the runner.

Monitor side: availability, scaffold, and the builds of the loader calls the runner recorded
(verifier.backends.cpu_builds). Runner side: the loaders, routed through the monitor
(verifier.sandbox.loaders), and the import of the candidate in a fresh namespace.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import types
from pathlib import Path
from typing import Any

from kernelbench_npu.spec import TaskSpec
from verifier import cpu_native
from verifier.backends import cpu_builds
from verifier.backends.base import Availability, Backend, BuildJob, BuildRejected, BuiltUnit, GateCapability, SeedItem
from verifier.roofline import MachinePeaks
from verifier.sandbox import seccomp
from verifier.settings import DEFAULT_PLAUSIBILITY_BOUND

_HERE = Path(__file__).parent


SLEEF_NOTES = """- Vector math (exp, log, tanh, erf, pow, sin...): without `-ffast-math` a loop calling `expf`,
  `tanhf` or `erff` stays scalar libm calls (a sigmoid written so runs several times slower than
  torch's). Include `<sleef.h>` and the loader links SLEEF, the vector math library PyTorch's own CPU
  kernels use: `Sleef_expf8_u10`, `Sleef_logf8_u10`, `Sleef_tanhf8_u10`, `Sleef_erff8_u10`,
  `Sleef_powf8_u10` take and return `__m256` (8 floats, error <= 1.0 ULP; `..f16_u10` for `__m512`
  on AVX-512, `..f4_u10` for `__m128`, `Sleef_expf_u10` scalar). For example, a vector sigmoid:
```cpp
{example}```"""
HAND_WRITTEN_NOTES = """- Vector math: without `-ffast-math` a loop calling `expf`, `tanhf` or `erff` stays scalar libm
  calls (several times slower than torch's vectorised ones). SLEEF is not installed here (Debian:
  libsleef-dev), so write a vector exp yourself: range reduction x = k ln2 + r, a degree-6
  polynomial for exp(r), then scale by 2^k through the exponent bits (k + 127 shifted left by 23),
  with inputs clamped to [-88, 88] and NaN passed through."""


def vector_math_notes() -> str:
    """The scaffold's vector-math paragraph: SLEEF with an example where the compiler finds it."""
    if cpu_native.header_available("sleef.h"):
        return SLEEF_NOTES.format(example=(_HERE / "cpu_example_sleef.txt").read_text())
    return HAND_WRITTEN_NOTES


class CpuBackend(Backend):
    name = "cpu"
    requires_native = True
    cpu_kernels = True

    def availability(self) -> Availability:
        compiler = shutil.which(cpu_native.COMPILER)
        has_torch = importlib.util.find_spec("torch") is not None
        sandbox_note = "" if seccomp.supported() else "no seccomp filter on this platform"
        missing = f"{cpu_native.COMPILER} not found on PATH (install it: apt-get install g++)"
        gates = (GateCapability("hack", True, ""), GateCapability("compile", bool(compiler), "" if compiler else missing),
                 GateCapability("correctness", has_torch, ""), GateCapability("latency", has_torch, sandbox_note))
        if not compiler:
            return Availability(self.name, False, missing, gates)
        if not has_torch:
            return Availability(self.name, False, "torch is not installed", gates)
        return Availability(self.name, True, f"{compiler} with OpenMP; torch CPU", gates)

    def scaffold(self, task: TaskSpec | None = None, threads: int = 2) -> str:
        text = (_HERE / "cpu_scaffold.md").read_text().format(
            threads=threads, bound=DEFAULT_PLAUSIBILITY_BOUND, vector_math=vector_math_notes(),
            example_task=(_HERE / "cpu_example_task.txt").read_text(),
            example_candidate=(_HERE / "cpu_example_candidate.txt").read_text())
        if task is not None:
            text += (f"\n## This task\n{task.task_id} ({task.name}), dtype {task.dtype}, "
                     f"tolerance atol={task.atol:g} rtol={task.rtol:g}.\n")
        return text

    def seed_items(self) -> tuple[SeedItem, ...]:
        example = (_HERE / "cpu_example_candidate.txt").read_text()
        return (SeedItem("cpu backend scaffold", self.scaffold(None)),
                SeedItem("cpu fast loader: linear + relu with OpenMP", "A complete load_c candidate.",
                         code=example, category="matmul"))

    def probe_peaks(self, threads: int) -> MachinePeaks:
        """STREAM-style triad and FMA throughput, built with the candidates' compiler and flags."""
        from verifier.backends import cpu_probe

        return cpu_probe.probe(threads)

    # ---- builds (monitor side) -------------------------------------------------------------------
    def build_job(self, loader: str, args: dict, context: dict[str, str]) -> BuildJob:
        if loader == "load_c":
            return cpu_builds.load_c_job(args)
        if loader == "load_inline":
            return cpu_builds.load_inline_job(args)
        raise BuildRejected(f"{loader}: not a loader of the cpu backend (use load_c or load_inline)")

    def built_units(self, job: BuildJob, records: dict[str, bytes], library: Path | None) -> tuple[BuiltUnit, ...]:
        return cpu_builds.units(job, records, library)

    def build_failure(self, job: BuildJob, output: str) -> str:
        return cpu_native.trim_diagnostics(output)

    # ---- runner side -----------------------------------------------------------------------------
    def install_loaders(self, client: Any) -> None:
        """load_c and load_inline send their actual arguments to the monitor and load what it built."""
        from torch.utils import cpp_extension

        from verifier.sandbox.loaders import inline_arguments

        cpu_native._CLIENT = client

        def load_inline(*args: Any, **kwargs: Any) -> Any:
            named = inline_arguments(args, kwargs)
            where = client.build("load_inline", named)
            module = cpp_extension._import_module_from_library(named["name"], where, True)
            return CountingModule(module)

        def load(*_args: Any, **_kwargs: Any) -> Any:
            raise cpu_native.NativeBuildError("torch.utils.cpp_extension.load reads source files; pass the sources "
                                              "inline (load_inline or load_c)")

        cpp_extension.load_inline = load_inline
        cpp_extension.load = load

    def load(self, candidate_source: str, workdir: str) -> type:
        """Import the candidate in a fresh module namespace."""
        module = types.ModuleType("candidate")
        module.__file__ = str(Path(workdir) / "candidate.py")
        sys.modules["candidate"] = module
        exec(compile(candidate_source, "candidate.py", "exec"), module.__dict__)
        model_new = module.__dict__.get("ModelNew")
        if not isinstance(model_new, type):
            raise LookupError("the candidate defines no class ModelNew")
        return model_new


class CountingModule:
    """A load_inline module whose function calls are counted (what the runner reports as native calls)."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str):
        target = getattr(self._module, name)
        if not callable(target) or isinstance(target, type):
            return target

        def counted(*args, **kwargs):
            cpu_native.CALLS[0] += 1
            return target(*args, **kwargs)

        return counted
