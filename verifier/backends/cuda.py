"""The ``cuda`` backend: KernelBench's inline-CUDA candidates (ModelNew + torch's load_inline).

The runner records each ``load_inline`` call with its actual arguments (verifier.sandbox.loaders) and
the monitor builds it in the confined builder (verifier.backends.cuda_build). Without a GPU the build
is compile-only: nvcc for the target architecture (sm_90 unless ``TORCH_CUDA_ARCH_LIST`` or the
present GPU says otherwise) against torch's headers, with ``-Xptxas -v`` so register / shared-memory
errors and spills reach the LLM; sources that include torch's CUDA-only headers (KernelBench layout:
``<c10/cuda/CUDAStream.h>``, ``<ATen/cuda/CUDAContext.h>``) compile against the include tree of
torch's CUDA wheel fetched by ``evokernel toolchain fetch-cuda-headers`` (verifier.backends.cuda_headers)
when the local torch is a CPU build; without fetched headers such sources get "compile unavailable
here" with the command to run. With a GPU the build is torch's own extension build, which the runner
loads; correctness and latency then run on the device, timed by the monitor.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelbench_npu.spec import TaskSpec
from verifier.backends import cuda_build, cuda_headers, cuda_policy
from verifier.backends.base import (Availability, Backend, BuildJob, BuildRejected, BuiltUnit, GateCapability,
                                    ToolchainMissing)
from verifier.backends.cuda_sources import CandidateFormatError, extension_from_call
from verifier.backends.gpu_timing import gpu_present
from verifier.backends.pymodule import import_candidate, model_new_class
from verifier.backends.scaffolds import read_scaffold
from verifier.backends.toolrun import trim_diagnostics

DEFAULT_ARCH = "sm_90"
NVCC_MISSING = ("nvcc not found (install the CUDA toolkit, e.g. `apt-get install nvidia-cuda-toolkit`, or set "
                "CUDA_HOME to one)")
_PTXAS_FUNC = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
CXX_STD = "-std=c++20"  # what torch 2.13's cpp_extension builds with (its headers use C++20 features)
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_HINTS = {
    "too much shared data": "static __shared__ arrays are limited to 48 KB per block; use a smaller tile "
                            "or dynamic shared memory (extern __shared__ + cudaFuncSetAttribute).",
    "cuda_cmake_macros.h": "this compile host's torch has no CUDA headers (CPU-only build): run `evokernel "
                           "toolchain fetch-cuda-headers` once, or launch kernels on the default stream "
                           "(kernel<<<blocks, threads>>>) without <ATen/cuda/...> or <c10/cuda/...>.",
    "cusparse.h": "this compile host's CUDA toolkit has no cuBLAS/cuSPARSE headers: do not include "
                  "<ATen/cuda/CUDAContext.h>; launch kernels on the default stream (kernel<<<blocks, threads>>>).",
    "cublas": "cuBLAS/cuSPARSE/cuSOLVER are only declared by a stub on this compile host (no math-library "
              "headers): write the kernel yourself instead of calling the library.",
    "too many resources requested": "the block needs more registers than the SM has; use fewer threads "
                                    "per block or __launch_bounds__.",
}


def find_nvcc() -> str | None:
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return str(Path(home) / "bin" / "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    return "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None


@lru_cache(maxsize=4)
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    match = re.search(r"release ([\d.]+)", out)
    return match.group(1) if match else "?"


def target_arch() -> str:
    """sm_XY from TORCH_CUDA_ARCH_LIST (first entry), else the present GPU, else sm_90."""
    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST", "").replace(";", " ").split()
    if arch_list:
        head = arch_list[0].split("+")[0].lower()
        return "sm_" + head.replace(".", "")
    present, _ = gpu_present()
    if present:
        import torch

        major, minor = torch.cuda.get_device_capability(0)
        return f"sm_{major}{minor}"
    return DEFAULT_ARCH


def arch_list_entry(arch: str) -> str:
    """sm_90 -> "9.0", sm_90a -> "9.0a", sm_100 -> "10.0" (TORCH_CUDA_ARCH_LIST spelling)."""
    digits = arch.removeprefix("sm_")
    suffix = digits[-1] if digits[-1].isalpha() else ""
    digits = digits.rstrip("abcdefghijklmnopqrstuvwxyz")
    return f"{digits[:-1]}.{digits[-1]}{suffix}"


def _torch_flags(headers: cuda_headers.HeaderChoice) -> tuple[list[str], list[str]]:
    """Include flags (the local torch's, or the fetched CUDA tree chosen for this source) and the
    nvcc defines torch's extension build uses."""
    from torch.utils import cpp_extension

    paths = headers.include_dirs or cpp_extension.include_paths()
    includes = [f"-I{p}" for p in paths] + [f"-I{sysconfig.get_paths()['include']}"]
    nvcc_defines = list(getattr(cpp_extension, "COMMON_NVCC_FLAGS", []))
    return includes, nvcc_defines


def _cuda_include(nvcc: str, headers: cuda_headers.HeaderChoice) -> list[str]:
    """The host unit (g++) sees the toolkit's headers too when it includes torch's CUDA headers."""
    if not headers.include_dirs:
        return []
    home = Path(nvcc).resolve().parent.parent
    return [f"-I{d}" for d in (home / "include", home / "targets" / "x86_64-linux" / "include") if d.is_dir()]


def nvcc_command(nvcc: str, arch: str, unit: str, define: str, headers: cuda_headers.HeaderChoice,
                 phase: tuple[str, ...]) -> list[str]:
    """nvcc's argv for one CUDA unit; ``phase`` is ("-c", "-o", OBJ) for the gate, ("-E", ...) to
    preprocess only."""
    includes, nvcc_defines = _torch_flags(headers)
    return [nvcc, f"-arch={arch}", *phase, unit, "-Xptxas", "-v", CXX_STD, "-Xcompiler", "-fPIC", define,
            "-DTORCH_API_INCLUDE_EXTENSION_H", *nvcc_defines, *includes,
            *[f"-Xcompiler=-idirafter,{d}" for d in headers.after_dirs]]


def host_command(nvcc: str, unit: str, define: str, headers: cuda_headers.HeaderChoice,
                 phase: tuple[str, ...] = ("-fsyntax-only",)) -> list[str]:
    """The host compiler's argv for the load_inline C++ unit (syntax check only: never linked here)."""
    includes, _ = _torch_flags(headers)
    cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
    return [cxx, *phase, CXX_STD, "-fPIC", define, "-DTORCH_API_INCLUDE_EXTENSION_H", *includes,
            *[f"-idirafter{d}" for d in headers.after_dirs], *_cuda_include(nvcc, headers), unit]


def ptxas_summary(output: str) -> str:
    """One line per kernel: registers, static shared memory, spills (from -Xptxas -v)."""
    lines, current = [], None
    for line in output.splitlines():
        if m := _PTXAS_FUNC.search(line):
            current = _demangle(m.group(1))
        elif current and (m := _PTXAS_SPILL.search(line)) and (int(m.group(1)) or int(m.group(2))):
            lines.append(f"{current}: spills {m.group(1)} B stores / {m.group(2)} B loads (registers exhausted)")
        elif current and (m := _PTXAS_USED.search(line)):
            lines.append(f"{current}: {m.group(1)} registers, {m.group(2) or 0} B static shared memory")
    return "\n".join(lines)


def _demangle(symbol: str) -> str:
    m = re.match(r"_Z(\d+)(\w+)", symbol)
    return m.group(2)[: int(m.group(1))] if m else symbol


class CudaBackend(Backend):
    name = "cuda"
    requires_native = True
    no_native = ("no torch.utils.cpp_extension.load_inline(...) call was made when the module was imported: build the "
                 "CUDA kernel with load_inline(name=..., cpp_sources=..., cuda_sources=..., functions=[...])")

    def availability(self) -> Availability:
        present, gpu = gpu_present()
        nvcc = find_nvcc()
        arch = target_arch()
        compile_cap = (GateCapability("compile", True, f"nvcc {nvcc_version(nvcc)} for {arch}") if nvcc
                       else GateCapability("compile", False, NVCC_MISSING))
        run_note = f"GPU {gpu}" if present else "no GPU"
        gates = (compile_cap, GateCapability("correctness", present, run_note),
                 GateCapability("latency", present, "CUDA events" if present else "no GPU"))
        if not nvcc:
            return Availability(self.name, False, NVCC_MISSING, gates)
        if not present:
            return Availability(self.name, False, gpu, gates)
        return Availability(self.name, True, f"{gpu}, nvcc {nvcc_version(nvcc)}, {arch}", gates)

    def scaffold(self, task: TaskSpec | None = None) -> str:
        return read_scaffold("cuda", task)

    def compile_context(self, task: TaskSpec) -> dict[str, str]:
        """Where fetched CUDA headers live, resolved with the user's environment (sandbox processes run
        with a private HOME)."""
        return {"cuda_headers_root": str(cuda_headers.cache_root())}

    # ---- builds (monitor side) -------------------------------------------------------------------
    def build_job(self, loader: str, args: dict, context: dict[str, str]) -> BuildJob:
        if loader != "load_inline":
            raise BuildRejected(f"{loader}: the cuda backend builds load_inline calls")
        try:
            ext = extension_from_call(args)
        except CandidateFormatError as exc:
            raise BuildRejected(f"cuda candidate format: {exc}") from None
        nvcc = find_nvcc()
        if nvcc is None:  # gone since the verification began: the machine's outcome
            raise ToolchainMissing(f"cuda: {NVCC_MISSING}")
        root = context.get("cuda_headers_root")
        headers = cuda_headers.choose([ext.cuda_sources + "\n" + ext.cpp_sources], nvcc,
                                      cuda_headers.installed(root=Path(root) if root else None))
        if headers.unavailable:
            raise BuildRejected(headers.unavailable, machine=True)
        toolchains = tuple(self.sandbox_paths(context))
        if gpu_present()[0]:
            return cuda_build.gpu_job(ext, args, target_arch(), toolchains)
        return cuda_build.compile_only_job(ext, nvcc, nvcc_version(nvcc), target_arch(), headers, toolchains)

    def built_units(self, job: BuildJob, records: dict[str, bytes], library: Path | None) -> tuple[BuiltUnit, ...]:
        return cuda_policy.units(job, records, library)

    def build_failure(self, job: BuildJob, output: str) -> str:
        """Each failed tool's trimmed output under its header (verifier.backends.cuda_build prints them)."""
        parts = []
        for section in re.split(r"(?m)^(?=\S+ failed \(exit -?\d+\):$)", output):
            head, _, body = section.partition("\n")
            if not re.fullmatch(r"\S+ failed \(exit -?\d+\):", head):
                continue
            hints = [hint for key, hint in _HINTS.items() if key in body]
            parts.append(f"{head}\n{trim_diagnostics(body, strip_prefixes=(sys.prefix,))}"
                         + "".join(f"\nhint: {h}" for h in hints))
        text = "\n".join(parts) or trim_diagnostics(output, strip_prefixes=(sys.prefix,))
        return text + (f"\n{job.note}" if job.note else "")

    def build_success(self, job: BuildJob, output: str) -> str:
        summary = ptxas_summary(output)
        return "; ".join(x for x in (job.note, summary.replace("\n", "; ")) if x)

    def sandbox_paths(self, context: dict[str, str] | None = None) -> tuple[str, ...]:
        nvcc = find_nvcc()  # the toolkit, and torch's CUDA headers when fetched (evokernel toolchain fetch-cuda-headers)
        headers = Path((context or {}).get("cuda_headers_root") or cuda_headers.cache_root())
        return ((str(Path(nvcc).resolve().parents[1]),) if nvcc else ()) + ((str(headers),) if headers.is_dir() else ())

    # ---- runner side -----------------------------------------------------------------------------
    def install_loaders(self, client: Any) -> None:
        from torch.utils import cpp_extension

        from verifier.sandbox.loaders import NotLoadedHere, inline_arguments

        def load_inline(*args: Any, **kwargs: Any) -> Any:
            named = inline_arguments(args, kwargs)
            where = client.build("load_inline", named)
            if not client.load:
                return NotLoadedHere(f"extension {named['name']}")
            return CountedExtension(cpp_extension._import_module_from_library(named["name"], where, True))

        cpp_extension.load_inline = load_inline

    def load(self, candidate_source: str, workdir: str) -> type:
        return model_new_class(import_candidate(candidate_source, Path(workdir), "cuda"), self.name)

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


class CountedExtension:
    """A load_inline extension module whose functions count as native calls (cpu_native.CALLS)."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if not callable(value) or isinstance(value, type):
            return value
        from verifier import cpu_native

        def counted(*args: Any, **kwargs: Any) -> Any:
            cpu_native.CALLS[0] += 1
            return value(*args, **kwargs)

        return counted
