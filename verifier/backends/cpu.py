"""The CPU backend: C++/OpenMP candidates built by the system compiler (fast loader) or by
torch's ``load_inline``, loaded in the sandbox child, timed with ``perf_counter_ns``.

Parent side: availability, scaffold. Child side: compile (every statically extracted native
source, before candidate code runs), load (the candidate module in a fresh namespace, with
``load_c``/``load_inline`` restricted to the prebuilt libraries).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from importlib import metadata
import sys
import time
import types
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier import cpu_native
from verifier.backends.base import Availability, Backend, BuiltUnit, CompileOutcome, GateCapability, SeedItem
from verifier.native_sources import INLINE_POSITIONAL, NativeSource, SourceExtractionError, extract
from verifier.roofline import MachinePeaks
from verifier.sandbox import seccomp
from verifier.sandbox.compile_cache import CacheEntry
from verifier.settings import DEFAULT_PLAUSIBILITY_BOUND

_HERE = Path(__file__).parent
# load_inline flags a candidate may pass; anything else is dropped (no -include, plugins, wraps).
INLINE_FLAG_ALLOW = {"-O3", "-O2", "-march=native", "-fopenmp", "-std=c++17", "-lgomp"}


def inline_key(kwargs: dict) -> str:
    """The load_inline call's arguments, the compiler and torch (whose headers and ABI it builds against)."""
    wanted = {k: kwargs.get(k) for k in ("name", "cpp_sources", "functions", "extra_cflags", "extra_ldflags")}
    wanted["toolchain"] = [cpu_native.source_key(""), _torch_version()]
    return hashlib.sha256(json.dumps(wanted, sort_keys=True, default=list).encode()).hexdigest()


def _torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "?"


def inline_source_lines(kwargs: dict) -> tuple[int, int]:
    """Lines of load_inline's main.cpp that hold the candidate's cpp_sources (line 1 is torch's
    ``#include <torch/extension.h>``, the generated pybind module follows them)."""
    cpp = kwargs.get("cpp_sources", "")
    code = "\n".join(cpp) if isinstance(cpp, list) else str(cpp)
    return 2, 2 + code.count("\n")


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

    def __init__(self) -> None:
        self._inline_built: dict[str, tuple[str, str]] = {}  # inline key -> (module name, build dir)

    def availability(self) -> Availability:
        compiler = shutil.which(cpu_native.COMPILER)
        has_torch = importlib.util.find_spec("torch") is not None
        sandbox_note = "" if seccomp.supported() else "no seccomp filter on this platform"
        gates = (GateCapability("hack", True, ""), GateCapability("compile", bool(compiler), "" if compiler else "no g++"),
                 GateCapability("correctness", has_torch, ""), GateCapability("latency", has_torch, sandbox_note))
        if not compiler:
            return Availability(self.name, False, f"{cpu_native.COMPILER} not found on PATH", gates)
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

    # ---- child side ----------------------------------------------------------------------
    def precheck(self, candidate_source: str) -> str:
        """Parent-side, before any process starts: syntax and statically resolvable native sources.
        Returns the compile-gate reason, or "" when the candidate may go on to the real build."""
        try:
            compile(candidate_source, "candidate.py", "exec")
            sources = extract(candidate_source)
        except SyntaxError as exc:
            return f"SyntaxError: line {exc.lineno}: {exc.msg}"
        except SourceExtractionError as exc:
            return str(exc)
        if not sources:
            return ("no native code: call load_c(SOURCE, {...}) (or load_inline) at module level; "
                    "all arithmetic must run in native code")
        return ""

    def cache_entries(self, candidate_source: str) -> tuple[CacheEntry, ...]:
        try:
            sources = extract(candidate_source)
        except (SyntaxError, SourceExtractionError):
            return ()
        entries = []
        for native in sources:
            if native.loader == "load_c":
                key = cpu_native.source_key(native.code)
                entries.append(CacheEntry(key, cpu_native.entry_dir(key)))
            else:
                key = inline_key(dict(native.inline_args))
                entries.append(CacheEntry(key, f"inline/{key}"))
        return tuple(entries)

    def compile(self, candidate_source: str, build_dir: Path, timeout_s: float) -> CompileOutcome:
        """Build every native source of the candidate into build_dir (private to the verification,
        seeded from the compile cache by the parent)."""
        start = time.perf_counter()
        problem = self.precheck(candidate_source)
        if problem:
            return CompileOutcome(False, problem, time.perf_counter() - start)
        sources = extract(candidate_source)
        artifacts, units, cached = [], [], True
        for native in sources:
            remaining = max(1.0, timeout_s - (time.perf_counter() - start))
            ok, diagnostics, built, unit, was_cached = self._build_one(native, Path(build_dir), remaining)
            if not ok:
                return CompileOutcome(False, diagnostics, time.perf_counter() - start)
            artifacts.extend(built)
            units.append(unit)
            cached = cached and was_cached
        return CompileOutcome(True, "", time.perf_counter() - start, cached, tuple(artifacts), tuple(units))

    def _build_one(self, native: NativeSource, build_dir: Path,
                   timeout_s: float) -> tuple[bool, str, tuple[str, ...], BuiltUnit, bool]:
        """(ok, diagnostics, files to cache, what the build-policy checks read, cached)."""
        if native.loader != "load_c":
            return self._build_inline(dict(native.inline_args), build_dir, native.where)
        result = cpu_native.build(native.code, build_dir, timeout_s)
        unit = BuiltUnit(f"load_c source ({native.where})", result.preprocessed, result.includes,
                         (result.library,) if result.ok else ())
        if not result.ok:
            return False, result.diagnostics, (), unit, False
        cpu_native._PREBUILT[cpu_native.source_key(native.code)] = result.library
        return True, "", (str(Path(result.library).parent),), unit, result.cached

    def _build_inline(self, kwargs: dict, build_dir: Path,
                      where: str) -> tuple[bool, str, tuple[str, ...], BuiltUnit, bool]:
        from torch.utils import cpp_extension

        from verifier.gates.hack_build import candidate_lines, read_text

        key = inline_key(kwargs)
        target = build_dir / "inline" / key
        name = str(kwargs.get("name", "candidate_ext"))
        library, record = target / f"{name}.so", target / "preprocessed.json"
        cached = library.is_file() and record.is_file()
        first, last = inline_source_lines(kwargs)
        if not cached:
            target.mkdir(parents=True, exist_ok=True)
            flags = [f for f in kwargs.get("extra_cflags") or [] if f in INLINE_FLAG_ALLOW]
            args = dict(name=name, cpp_sources=kwargs.get("cpp_sources", ""), functions=kwargs.get("functions"),
                        extra_cflags=[*flags, "-save-temps"],  # main.ii: the build-policy checks read it
                        extra_ldflags=[f for f in kwargs.get("extra_ldflags") or [] if f in INLINE_FLAG_ALLOW],
                        build_directory=str(target), verbose=False, with_cuda=False)
            try:
                cpp_extension.load_inline(**args)
            except Exception as exc:  # torch raises RuntimeError with the full compiler log
                return False, cpu_native.trim_diagnostics(str(exc), str(target)), (), BuiltUnit("load_inline"), False
            text, includes = candidate_lines(read_text(target / "main.ii"), first, last)
            record.write_text(json.dumps({"text": text, "includes": includes}))
            for temp in target.glob("main.[ios]*"):
                temp.unlink()  # the preprocessed text is kept in record; 20 MB of main.ii is not
        text, includes = cpu_native._read_record(record)
        self._inline_built[key] = (name, str(target))
        unit = BuiltUnit(f"load_inline cpp_sources ({where})", text, includes, (str(library),), line_offset=first - 1)
        return True, "", (str(library), str(record)), unit, cached

    def load(self, candidate_source: str, build_dir: Path) -> type:
        """Import the candidate in a fresh module namespace; loaders only load prebuilt code."""
        cpu_native._SANDBOXED = True
        self._restrict_load_inline()
        module = types.ModuleType("candidate")
        module.__file__ = str(Path(build_dir) / "candidate.py")
        sys.modules["candidate"] = module
        exec(compile(candidate_source, "candidate.py", "exec"), module.__dict__)
        model_new = module.__dict__.get("ModelNew")
        if not isinstance(model_new, type):
            raise LookupError("the candidate defines no class ModelNew")
        return model_new

    def _restrict_load_inline(self) -> None:
        from torch.utils import cpp_extension

        built = self._inline_built

        def load_inline_prebuilt(*args, **kwargs):
            kwargs.update(zip(INLINE_POSITIONAL, args))
            entry = built.get(inline_key(kwargs))
            if entry is None:
                raise cpu_native.NativeBuildError("load_inline: these arguments were not built by the compile "
                                                  "gate; pass string literals or module-level constants (directly or "
                                                  "through a build helper's parameters)")
            module = cpp_extension._import_module_from_library(entry[0], entry[1], True)
            return _CountingModule(module)

        cpp_extension.load_inline = load_inline_prebuilt


class _CountingModule:
    """A load_inline module whose function calls are counted (the runtime 'native code ran' check)."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str):
        target = getattr(self._module, name)
        if not callable(target):
            return target

        def counted(*args, **kwargs):
            cpu_native.CALLS[0] += 1
            return target(*args, **kwargs)

        return counted
