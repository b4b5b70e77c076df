"""The ``triton-ascend`` backend: Triton kernels for Ascend NPUs, checked by the real Ascend compiler.

Without an NPU (every laptop, CI) three things still run for real:

- **compile**: the candidate's ``@triton.jit`` kernels go through triton-ascend's front end and
  ascendnpu-ir's ``bishengir-compile`` (HFusion/HIVM pipeline: Unified Buffer planning, sync
  insertion, Ascend legality checks) for the target SoC, in the toolchain's own environment
  (:mod:`.toolchain`, ``evokernel toolchain install triton-ascend``). Argument types and
  constexprs are not guessed: the candidate's ``ModelNew`` runs once on shape-only stand-ins of
  the task's inputs at their original sizes (meta tensors: shapes, strides, dtypes and scalars,
  never allocated; :mod:`.shape_record`) in a sandboxed child of the toolchain environment, and
  each launch's exact specialisation is compiled (:mod:`.driver`, :mod:`.driver_record`). Reaching
  CANN's external ``hivmc`` step is a pass at HIVM level, and the gate's reason says so; with
  CANN's real ``hivmc`` the compile continues to an NPU binary.
- **correctness**: the same kernels in upstream Triton's interpreter (main environment) at the
  build's ``interpreter`` sizes (:func:`verifier.backends.small_shapes.interpreter_task_source`:
  about 1 MiB of tensors, every size shrunk together whatever its form, roles kept), the sizes
  the build linted the reference at. A candidate using Ascend-only language features gets
  "correctness unavailable here: <feature>" (:mod:`.features`).
- **latency**: unavailable ("needs torch_npu and an NPU").

On an Ascend host with torch_npu and an NPU, correctness and latency run on the device
(:mod:`.device`; written carefully but never run by this project, which has no NPU).

The parent resolves what the sandboxed child cannot (it runs with a private HOME): the task as
built, the toolchain directory, the SoC and whether an NPU is usable, passed through
:meth:`compile_context` / :meth:`configure`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier.backends.base import Availability, Backend, BuildJob, GateCapability, SeedItem, ToolchainMissing
from verifier.backends.pymodule import import_candidate, model_new_class
from verifier.backends.scaffolds import read_scaffold, scaffold_sections
from verifier.backends.small_shapes import interpreter_task_source
from verifier.backends.triton_ascend import device as npu
from verifier.backends.triton_ascend.diagnostics import syntax_error
from verifier.backends.triton_ascend.features import ascend_only_features, missing_npu_modules, npu_modules_reason
from verifier.backends.triton_ascend.toolchain import locate, target_soc, toolchain_problem
from verifier.backends.triton_backend import TritonBackend, count_launches, set_interpreter, triton_version
from verifier.backends.triton_modes import autotune_report, rotate_autotune_configs, turn_per_input
from verifier.toolchains import ToolchainError, toolchains_root

NAME = "triton-ascend"
COMPILE_TIMEOUT_S = 300.0  # the recording's share of the compile deadline is taken from this
INTERPRETER_HINT = "pip install 'evokernel[triton]' (upstream Triton's interpreter)"


class TritonAscendBackend(Backend):
    name = NAME
    static_imports = frozenset({"triton", "triton.language", "triton.language.math", "triton.language.extra",
                                "triton.language.extra.libdevice", "triton.language.extra.ascend",
                                "triton.language.extra.ascend.libdevice"})

    def __init__(self) -> None:
        self.context: dict[str, str] = {}

    # ---- parent side ---------------------------------------------------------------------------
    def availability(self) -> Availability:
        problem = toolchain_problem()
        npu_ok, npu_note = npu.npu_ready()
        compile_note = problem or locate().describe()
        if npu_ok:
            correctness = GateCapability("correctness", True, f"NPU ({npu_note})")
        elif triton_version() is not None:
            correctness = GateCapability("correctness", True, "upstream Triton interpreter, interpreter sizes")
        else:
            correctness = GateCapability("correctness", False, f"needs {INTERPRETER_HINT}")
        gates = (GateCapability("compile", not problem, compile_note), correctness,
                 GateCapability("latency", npu_ok, "NPU events" if npu_ok else "needs torch_npu and an NPU"))
        if problem or not npu_ok:
            return Availability(self.name, False, problem or npu_note, gates)
        return Availability(self.name, True, f"{compile_note}, {npu_note}", gates)

    def availability_for(self, candidate_source: str, availability: Availability) -> Availability:
        if npu.npu_ready()[0]:
            return availability
        features = ascend_only_features(candidate_source)
        if not features:
            return availability
        note = (f"{', '.join(features)} (Ascend-only: triton-ascend compiles it, upstream Triton's interpreter "
                f"cannot run it)")
        gates = tuple(GateCapability(g.gate, False, note) if g.gate == "correctness" else g for g in availability.gates)
        return Availability(availability.backend, availability.available, availability.reason, gates)

    def unavailable_past_import(self, candidate_source: str) -> str:
        if npu.npu_ready()[0]:
            return ""
        features = ascend_only_features(candidate_source)
        return f"{', '.join(features)} is Ascend-only" if features else ""

    def scaffold(self, task: TaskSpec | None = None) -> str:
        return read_scaffold(NAME, task)

    def seed_items(self) -> tuple[SeedItem, ...]:
        return tuple(SeedItem(title=f"Triton on Ascend: {title}", body=body, category="api")
                     for title, body in scaffold_sections(NAME))

    def precheck(self, candidate_source: str) -> str:
        problem = syntax_error(candidate_source) or TritonBackend().precheck(candidate_source)
        if problem:
            return problem
        missing = missing_npu_modules(candidate_source)
        return npu_modules_reason(missing) if missing else ""

    def compile_context(self, task: TaskSpec) -> dict[str, str]:
        self.context = {"task_source": task.source, "dtype": task.dtype, "toolchains": str(toolchains_root()),
                        "soc": target_soc(), "device": "npu" if npu.npu_ready()[0] else "cpu"}
        return self.context

    def sandbox_paths(self) -> tuple[str, ...]:
        """The toolchain environments (its Python, triton-ascend, bishengir-compile) and CANN when present."""
        paths = [str(toolchains_root())]
        cann = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
        return tuple(paths + ([cann] if cann else []))

    def correctness_task_source(self, task_source: str) -> str:
        return task_source if npu.npu_ready()[0] else interpreter_task_source(task_source)

    # ---- child side ----------------------------------------------------------------------------
    def configure(self, context: dict[str, str]) -> None:
        self.context = dict(context)

    def _on_npu(self) -> bool:
        return self.context.get("device") == "npu"

    def compile_jobs(self, candidate_source: str, context: dict[str, str]) -> tuple[BuildJob, ...]:
        from verifier.backends.triton_ascend.gate import driver_job

        toolchain = self._toolchain(context)
        return (driver_job(candidate_source, context["task_source"], toolchain, COMPILE_TIMEOUT_S,
                           context.get("dtype", "float32")),)

    def judge_build(self, job: BuildJob, code: int, output: str, records: dict[str, bytes],
                    context: dict[str, str]) -> tuple[bool, str]:
        from verifier.backends.triton_ascend.gate import judge

        request = json.loads(dict(job.files)["request.json"])
        return judge(records, output, request["candidate_source"], self._toolchain(context))

    def toolchain_problem(self) -> str:
        return toolchain_problem()

    def _toolchain(self, context: dict[str, str]):
        root = Path(context["toolchains"]) if context.get("toolchains") else None
        try:
            return locate(root, context.get("soc"))
        except ToolchainError as exc:  # absent or broken here: the machine's outcome, never the candidate's
            raise ToolchainMissing(f"triton-ascend: {exc}") from None

    def before_sandbox(self) -> None:
        if self._on_npu():
            toolchain = locate(Path(self.context["toolchains"]), self.context.get("soc"))
            tools = (str(toolchain.bishengir_bin),) + ((str(toolchain.hivmc.parent),) if toolchain.hivmc else ())
            npu.activate_triton_ascend(str(toolchain.site_packages), tools)
        else:  # the interpreter: each new input takes the next @triton.autotune config (no benchmarking)
            set_interpreter(True)
            rotate_autotune_configs()
        count_launches()

    def runtime_note(self) -> str:
        return "" if self._on_npu() else autotune_report("an NPU")

    def load(self, candidate_source: str, build_dir: str) -> type:
        if not self._on_npu():
            features = ascend_only_features(candidate_source)
            if features:  # the gate plan normally stops before load; this guards direct use
                raise RuntimeError(f"correctness unavailable here: {', '.join(features)} is Ascend-only")
            if triton_version() is None:
                raise RuntimeError(f"triton-ascend: correctness here needs {INTERPRETER_HINT}")
            set_interpreter(True)
        model_cls = model_new_class(import_candidate(candidate_source, Path(build_dir), "triton_ascend"), self.name)
        return model_cls if self._on_npu() else turn_per_input(model_cls)  # autotune: a config per input

    def exec_after_load(self) -> str:
        return "triton-ascend JIT-compiles kernels (bishengir-compile, hivmc) at first launch" if self._on_npu() else ""

    def device(self) -> str:
        return "npu" if self._on_npu() else "cpu"

    def synchronize(self) -> None:
        if self._on_npu():
            npu.npu_synchronize()

    def flush_cache(self) -> None:
        """On an NPU: the L2 cleared before a timed call (in its untimed preparation; ascendc.npu_timing)."""
        if self._on_npu():
            npu.flush_l2()


__all__ = ["TritonAscendBackend"]
