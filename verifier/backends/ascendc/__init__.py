"""The ``ascendc`` backend: Ascend C operators built with CANN and run through torch_npu.

Available only where CANN (with ``bisheng``), torch_npu and an NPU are present; otherwise
``availability`` says why and ``compile`` / ``load`` refuse, so a candidate is never passed.
Without hardware the container format and path checks, the build command lines and the parsing
of compiler output still run (the tests drive them with stub tools on PATH).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from kernelbench_npu.spec import TaskSpec
from verifier.backends.ascendc.build import BUILDERS, project_dir
from verifier.backends.ascendc.candidate import AscendCFormatError, parse_candidate
from verifier.backends.ascendc.toolchain import locate_cann, probe_npu, toolchain_problem
from verifier.backends.base import Availability, Backend, BuiltUnit, CompileOutcome, GateCapability, SeedItem
from verifier.backends.pymodule import import_candidate, model_new_class
from verifier.backends.scaffolds import read_scaffold, scaffold_sections



class AscendCBackend(Backend):
    name = "ascendc"

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

    def compile(self, candidate_source: str, build_dir: Path, timeout_s: float) -> CompileOutcome:
        start = time.perf_counter()
        try:
            candidate = parse_candidate(candidate_source)
        except AscendCFormatError as exc:
            return CompileOutcome(False, f"ascendc candidate format: {exc}", time.perf_counter() - start)
        chain = locate_cann()
        problem = toolchain_problem(chain)
        if problem:
            return CompileOutcome(False, f"ascendc: unavailable: {problem}", time.perf_counter() - start)
        root = project_dir(build_dir, candidate)
        result = BUILDERS[candidate.format](candidate, chain, root, timeout_s)
        artifacts = (str(result.library),) if result.library else ()
        if result.ok and result.opp_vendor_dir is not None:
            (root / "opp_vendor_dir.txt").write_text(str(result.opp_vendor_dir))
        # CANN's runtime names are not on the symbol allowlist: refuse the known-dangerous calls only
        units = (BuiltUnit(f"Ascend C build of {candidate.op_name}", binaries=artifacts, strict_symbols=False),)
        return CompileOutcome(result.ok, result.feedback, time.perf_counter() - start, artifacts=artifacts,
                              units=units if result.ok else ())

    def load(self, candidate_source: str, build_dir: Path) -> type:
        problem = toolchain_problem(locate_cann())
        if problem:  # no subprocess probe here: load runs under the sandbox's no-exec filter
            raise RuntimeError(f"ascendc: unavailable: {problem}")
        candidate = parse_candidate(candidate_source)
        root = project_dir(build_dir, candidate)
        vendor = root / "opp_vendor_dir.txt"
        if vendor.is_file():
            os.environ["ASCEND_CUSTOM_OPP_PATH"] = vendor.read_text().strip()
        import torch
        import torch_npu  # noqa: F401  (registers the NPU device before the module loads)

        if not torch.npu.is_available():
            raise RuntimeError("ascendc: unavailable: no NPU device (torch.npu.is_available() is False)")

        sys.path.insert(0, str(root / "lib"))
        return model_new_class(import_candidate(candidate_source, build_dir, "ascendc"), self.name)

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

    def timer(self) -> Callable[[Callable[[], Any]], float]:
        """NPU events with the L2 cleared before every call (:mod:`.npu_timing`)."""
        from verifier.backends.ascendc.npu_timing import EventTimer, npu_api

        return EventTimer(npu_api())

    def kernel_attribution(self, fn: Callable[[], Any]) -> str:
        """One line: the device kernels one untimed call of ``fn`` runs and each one's share."""
        from verifier.backends.ascendc.npu_timing import attribute, attribution_note, npu_api

        return attribution_note(attribute(npu_api(), fn))


__all__ = ["AscendCBackend"]
