"""The ``cuda`` backend: KernelBench's inline-CUDA candidates (ModelNew + torch's load_inline).

Compile gate: the CUDA and host sources are read statically from the candidate's load_inline
call (never executed for this) and compiled with nvcc for the target architecture (sm_90 unless
``TORCH_CUDA_ARCH_LIST`` or the present GPU says otherwise) against torch's headers, with
``-Xptxas -v`` so register / shared-memory errors and spills reach the LLM. This works on a
machine without a GPU. Sources that include torch's CUDA-only headers (KernelBench layout:
``<c10/cuda/CUDAStream.h>``, ``<ATen/cuda/CUDAContext.h>``) compile against the include tree of
torch's CUDA wheel fetched by ``evokernel toolchain fetch-cuda-headers``
(verifier.backends.cuda_headers) when the local torch is a CPU build; the passing compile gate's
reason names the headers used, and without fetched headers such sources get "compile unavailable
here" with the command to run. Correctness and latency need a GPU: ``load`` imports the
candidate, whose load_inline builds into a private ``TORCH_EXTENSIONS_DIR`` under build_dir; the
timer uses CUDA events with an L2 flush before each call.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from kernelbench_npu.spec import TaskSpec
from verifier.backends import cuda_headers
from verifier.backends import cuda_policy
from verifier.backends.base import Availability, Backend, CompileOutcome, GateCapability
from verifier.backends.cuda_sources import CandidateFormatError, InlineExtension, extract_inline_extensions
from verifier.backends.gpu_timing import cuda_event_timer, gpu_present
from verifier.backends.pymodule import import_candidate, model_new_class
from verifier.backends.scaffolds import read_scaffold
from verifier.backends.toolrun import ToolRun, run_tool, trim_diagnostics
from verifier.sandbox.compile_cache import CacheEntry

DEFAULT_ARCH = "sm_90"
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

    def availability(self) -> Availability:
        present, gpu = gpu_present()
        nvcc = find_nvcc()
        arch = target_arch()
        compile_cap = (GateCapability("compile", True, f"nvcc {nvcc_version(nvcc)} for {arch}") if nvcc
                       else GateCapability("compile", False, "nvcc not found (set CUDA_HOME)"))
        run_note = f"GPU {gpu}" if present else "no GPU"
        gates = (compile_cap, GateCapability("correctness", present, run_note),
                 GateCapability("latency", present, "CUDA events" if present else "no GPU"))
        if not nvcc:
            return Availability(self.name, False, "nvcc not found (set CUDA_HOME or put nvcc on PATH)", gates)
        if not present:
            return Availability(self.name, False, gpu, gates)
        return Availability(self.name, True, f"{gpu}, nvcc {nvcc_version(nvcc)}, {arch}", gates)

    def scaffold(self, task: TaskSpec | None = None) -> str:
        return read_scaffold("cuda", task)

    def __init__(self) -> None:
        self.context: dict[str, str] = {}  # compile_context's dict, in the sandbox child

    def compile_context(self, task: TaskSpec) -> dict[str, str]:
        """Where fetched CUDA headers live, resolved with the user's environment (the sandbox child
        runs with a private HOME)."""
        return {"cuda_headers_root": str(cuda_headers.cache_root())}

    def configure(self, context: dict[str, str]) -> None:
        self.context = dict(context)

    def precheck(self, candidate_source: str) -> str:
        try:
            extract_inline_extensions(candidate_source)
        except CandidateFormatError as exc:
            return f"cuda candidate format: {exc}"
        return ""

    def cache_entries(self, candidate_source: str) -> tuple[CacheEntry, ...]:
        if gpu_present()[0] or find_nvcc() is None:
            return ()  # a GPU build also leaves torch's extension dir, which is private to the verification
        try:
            extensions = extract_inline_extensions(candidate_source)
        except CandidateFormatError:
            return ()
        headers = cuda_headers.choose([e.cuda_sources + "\n" + e.cpp_sources for e in extensions], find_nvcc(),
                                      cuda_headers.installed())
        if headers.unavailable:
            return ()
        digest, key = _digests(target_arch(), nvcc_version(find_nvcc()), candidate_source, headers.key)
        return (CacheEntry(key, f"cuda-{digest}"),)

    def compile(self, candidate_source: str, build_dir: Path, timeout_s: float) -> CompileOutcome:
        start = time.perf_counter()
        try:
            extensions = extract_inline_extensions(candidate_source)
        except CandidateFormatError as exc:
            return CompileOutcome(False, f"cuda candidate format: {exc}", time.perf_counter() - start)
        nvcc = find_nvcc()
        if nvcc is None:
            return CompileOutcome(False, "cuda: nvcc not found (set CUDA_HOME)", time.perf_counter() - start)
        arch = target_arch()
        root = self.context.get("cuda_headers_root")
        headers = cuda_headers.choose([e.cuda_sources + "\n" + e.cpp_sources for e in extensions], nvcc,
                                      cuda_headers.installed(root=Path(root) if root else None))
        if headers.unavailable:
            return CompileOutcome(False, headers.unavailable, time.perf_counter() - start)
        digest, _ = _digests(arch, nvcc_version(nvcc), candidate_source, headers.key)
        work = build_dir / f"cuda-{digest}"
        marker = work / "compile-ok.txt"
        gpu = gpu_present()[0]
        gpu_build = _gpu_build(candidate_source, build_dir) if gpu else ""
        if gpu_build:
            return CompileOutcome(False, gpu_build, time.perf_counter() - start)
        gpu_units = cuda_policy.gpu_units(build_dir / "torch_extensions", extensions) if gpu else ()
        if marker.is_file():
            return CompileOutcome(True, marker.read_text(), time.perf_counter() - start, cached=True, artifacts=(str(work),),
                                  units=cuda_policy.compile_only_units(extensions, work) + gpu_units, note=headers.note)
        work.mkdir(parents=True, exist_ok=True)
        runs = self._compile_units(nvcc, arch, extensions, work, timeout_s, headers)
        seconds = time.perf_counter() - start
        failed = [r for r in runs if not r.ok]
        if failed:
            feedback = _failure_feedback(failed, work)
            return CompileOutcome(False, feedback + (f"\n{headers.note}" if headers.note else ""), seconds,
                                  note=headers.note)
        cuda_policy.write_records(extensions, work)
        summary = ptxas_summary("\n".join(r.stderr + r.stdout for r in runs))
        marker.write_text(summary)
        return CompileOutcome(True, summary, seconds, artifacts=(str(work),),
                              units=cuda_policy.compile_only_units(extensions, work) + gpu_units, note=headers.note)

    def _compile_units(self, nvcc: str, arch: str, extensions: tuple[InlineExtension, ...], work: Path,
                       timeout_s: float, headers: cuda_headers.HeaderChoice) -> list[ToolRun]:
        jobs: list[list[str]] = []
        for i, ext in enumerate(extensions):
            define = f"-DTORCH_EXTENSION_NAME={ext.name}"
            cu, cpp = work / f"{ext.name}_{i}.cu", work / f"{ext.name}_{i}.cpp"
            cu.write_text(ext.cuda_unit())
            jobs.append(nvcc_command(nvcc, arch, cu.name, define, headers,
                                     ("-c", "-o", f"{cu.stem}.cuda.o", *cuda_policy.NVCC_KEEP)))  # keeps what the build checks read
            if ext.cpp_sources.strip() or ext.functions:
                cpp.write_text(ext.cpp_unit())
                jobs.append(host_command(nvcc, cpp.name, define, headers, ("-fsyntax-only", *cuda_policy.GXX_KEEP)))
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(lambda argv: run_tool(argv, work, timeout_s), jobs))

    def load(self, candidate_source: str, build_dir: Path) -> type:
        present, why = gpu_present()
        if not present:
            raise RuntimeError(f"cuda: correctness and latency need a GPU: {why}")
        ext_dir = build_dir / "torch_extensions"  # built by compile() (no exec allowed from here on)
        ext_dir.mkdir(parents=True, exist_ok=True)
        os.environ["TORCH_EXTENSIONS_DIR"] = str(ext_dir)  # private to this verification
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", arch_list_entry(target_arch()))
        return model_new_class(import_candidate(candidate_source, build_dir, "cuda"), self.name)

    def sandbox_paths(self) -> tuple[str, ...]:
        nvcc = find_nvcc()  # the toolkit, and torch's CUDA headers when fetched (evokernel toolchain fetch-cuda-headers)
        # in the sandbox child, the parent's resolution (configure): the child runs with a private HOME
        headers = Path(self.context.get("cuda_headers_root") or cuda_headers.cache_root())
        return ((str(Path(nvcc).resolve().parents[1]),) if nvcc else ()) + ((str(headers),) if headers.is_dir() else ())

    def before_sandbox(self) -> None:
        count_extension_calls()  # before the candidate imports load_inline

    def device(self) -> str:
        return "cuda"

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()

    def timer(self) -> Callable[[Callable[[], Any]], float]:
        return cuda_event_timer()


class CountedExtension:
    """A load_inline extension module whose functions count as native calls (cpu_native.CALLS),
    for the runtime integrity check "forward made no native call"."""

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


def count_extension_calls() -> None:
    """Make torch.utils.cpp_extension.load_inline return :class:`CountedExtension` (idempotent)."""
    from torch.utils import cpp_extension

    original = cpp_extension.load_inline
    if getattr(original, "_evokernel_counted", False):
        return

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        module = original(*args, **kwargs)
        return CountedExtension(module) if isinstance(module, ModuleType) else module

    load_inline._evokernel_counted = True
    cpp_extension.load_inline = load_inline


def _gpu_build(candidate_source: str, build_dir: Path) -> str:
    """On a GPU machine, run the candidate's own load_inline calls (statically resolved arguments)
    now, before the sandbox forbids exec: load() then finds the build up to date in this process.
    Returns "" on success, else the trimmed build error."""
    from torch.utils.cpp_extension import load_inline

    from verifier.native_sources import SourceExtractionError, extract

    os.environ["TORCH_EXTENSIONS_DIR"] = str(build_dir / "torch_extensions")
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", arch_list_entry(target_arch()))
    try:
        calls = [s for s in extract(candidate_source) if s.loader == "load_inline"]
        for call in calls:
            load_inline(**dict(call.inline_args))
    except SourceExtractionError as exc:
        return f"cuda candidate format: {exc}"
    except Exception as exc:  # torch raises RuntimeError with the ninja/nvcc log
        return "load_inline build failed:\n" + trim_diagnostics(str(exc), strip_prefixes=(str(build_dir),))
    return ""


def _digests(arch: str, nvcc_release: str, candidate_source: str, headers_key: str) -> tuple[str, str]:
    """(the build directory's short digest, the compile-cache key: arch, nvcc and torch's headers too)."""
    from importlib import metadata

    digest = hashlib.sha256(f"{arch}\0{headers_key}\0{candidate_source}".encode()).hexdigest()[:20]
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "?"
    key = hashlib.sha256(f"{arch}\0{nvcc_release}\0{torch_version}\0{headers_key}\0{candidate_source}".encode()).hexdigest()
    return digest, key


def _failure_feedback(failed: list[ToolRun], work: Path) -> str:
    parts = []
    for run in failed:
        tool = Path(run.argv[0]).name
        text = trim_diagnostics(run.stderr + "\n" + run.stdout, strip_prefixes=(str(work), sys.prefix))
        hints = [hint for key, hint in _HINTS.items() if key in run.stderr]
        parts.append(f"{tool} failed (exit {run.returncode}):\n{text}" + "".join(f"\nhint: {h}" for h in hints))
    return "\n".join(parts)
