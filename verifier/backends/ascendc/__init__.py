"""The ``ascendc`` backend: Ascend C operators built with CANN and run through torch_npu.

Available only where CANN (with ``bisheng``), torch_npu and an NPU are present; otherwise
``availability`` says why and the build / ``load`` refuse, so a candidate is never passed. The build
runs in the monitor's confined builder (:mod:`.build_job`); the runner unpacks what it built.
Without hardware the container format and path checks, the build command lines and the parsing
of compiler output still run (the tests drive them with stub tools on PATH).
"""

from __future__ import annotations

import json
import os
import sys
import tarfile
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier.backends.ascendc import build_job
from verifier.backends.ascendc.candidate import AscendCFormatError, parse_candidate
from verifier.backends.ascendc.toolchain import locate_cann, probe_npu, toolchain_problem
from verifier.backends.base import (Availability, Backend, BuildJob, BuiltUnit, GateCapability, SeedItem,
                                    ToolchainMissing)
from verifier.backends.pymodule import import_candidate, model_new_class
from verifier.backends.scaffolds import read_scaffold, scaffold_sections

class AscendCBackend(Backend):
    name = "ascendc"

    def __init__(self) -> None:
        self.context: dict[str, str] = {}

    def availability(self) -> Availability:
        chain = locate_cann()
        problem = toolchain_problem(chain)
        npu_ok, npu_note = probe_npu() if not problem else (False, "needs CANN first")
        compile_note = problem or f"bisheng {chain.npu_arch}" + ("" if chain.msopgen else ", no msopgen: direct-launch only")
        gates = (GateCapability("compile", not problem, problem or compile_note),
                 GateCapability("correctness", npu_ok, npu_note if npu_ok else "needs torch_npu and an NPU"),
                 GateCapability("latency", npu_ok, "NPU events" if npu_ok else "needs torch_npu and an NPU"))
        if problem:
            return Availability(self.name, False, problem, gates)
        if not npu_ok:
            return Availability(self.name, False, npu_note, gates)
        return Availability(self.name, True, f"CANN at {chain.root}, {chain.soc}, {npu_note}", gates)

    def scaffold(self, task: TaskSpec | None = None) -> str:
        return read_scaffold("ascendc", task)

    def seed_items(self) -> tuple[SeedItem, ...]:
        return tuple(SeedItem(title=f"Ascend C: {title}", body=body, category="api")
                     for title, body in scaffold_sections("ascendc"))

    def precheck(self, candidate_source: str) -> str:
        try:
            parse_candidate(candidate_source)
        except AscendCFormatError as exc:
            return f"ascendc candidate format: {exc}"
        return ""

    def compile_jobs(self, candidate_source: str, context: dict[str, str]) -> tuple[BuildJob, ...]:
        chain = locate_cann()
        problem = toolchain_problem(chain)
        if problem:  # gone since the verification began: the machine's outcome
            raise ToolchainMissing(f"ascendc: {problem}")
        return (build_job.job(candidate_source, chain.soc or "", tuple(self.sandbox_paths())),)

    def built_units(self, job: BuildJob, records: dict[str, bytes], library: Path | None) -> tuple[BuiltUnit, ...]:
        # CANN's runtime names are not on the symbol allowlist: refuse the known-dangerous calls only
        return (BuiltUnit("Ascend C build", binaries=(str(library),) if library else (), strict_symbols=False,
                          loader="vendor"),)

    def load(self, candidate_source: str, workdir: str) -> type:
        problem = toolchain_problem(locate_cann())
        if problem:
            raise RuntimeError(f"ascendc: unavailable: {problem}")
        built = json.loads(self.context.get("builds", "{}")).get("Ascend C build")
        if not built:
            raise RuntimeError("ascendc: the monitor built no library for this candidate")
        target = Path(workdir) / "ascendc"
        with tarfile.open(Path(built) / build_job.ARTIFACT) as tar:
            tar.extractall(target, filter="data")
        if (target / "vendor").is_dir():
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = str(target / "vendor")
        import torch
        import torch_npu  # noqa: F401  (registers the NPU device before the module loads)

        if not torch.npu.is_available():
            raise RuntimeError("ascendc: unavailable: no NPU device (torch.npu.is_available() is False)")
        sys.path.insert(0, str(target / "lib"))
        return model_new_class(import_candidate(candidate_source, Path(workdir), "ascendc"), self.name)

    def configure(self, context: dict[str, str]) -> None:
        self.context = dict(context)

    def sandbox_paths(self) -> tuple[str, ...]:
        chain = locate_cann()
        tools = [t.parent for t in (chain.bisheng, chain.msopgen) if t is not None]
        installs = [p for p in (Path("/usr/local/Ascend"), Path("/etc/ascend_install.info")) if p.exists()]
        return tuple(str(p) for p in ([chain.root] if chain.root else []) + tools + installs)

    def device(self) -> str:
        return "npu"

    def synchronize(self) -> None:
        import torch

        torch.npu.synchronize()

    def flush_cache(self) -> None:
        """The NPU's L2 cleared before a timed call, in its untimed preparation (:mod:`.npu_timing`)."""
        from verifier.backends.triton_ascend.device import flush_l2

        flush_l2()


__all__ = ["AscendCBackend"]
