"""The CPU backend's fast loader: C++ with OpenMP compiled by the system compiler straight into a
shared library (no torch headers, ~0.3-1 s) and called through ctypes with tensor-aware arguments.

Candidates use exactly::

    from verifier.cpu_native import load_c
    lib = load_c(SOURCE, {"my_kernel": "const float*, float*, int64"})
    lib.my_kernel(x, y, x.numel())   # tensors are passed as pointers after dtype/layout checks

Flags (fixed, candidates cannot add any): ``g++ -O3 -march=native -fopenmp -fPIC -shared
-std=c++17 -Wl,--no-undefined``. ``-ffast-math`` is deliberately NOT used: it assumes no NaN/Inf
(``isnan`` folds to false) and reassociates reductions, while the verifier compares against IEEE
results with NaN/Inf checks; vectorise explicitly (``#pragma omp simd``) instead. For vector
exp/log/tanh/erf/... a source that includes ``<sleef.h>`` is linked with ``-lsleef`` (SLEEF, the
vector math library PyTorch's own CPU kernels use; Debian's libsleef-dev), see :func:`link_flags`.

Libraries are cached by the hash of (compiler, flags, source): ``cpu/<key>/kernel.so`` plus
``preprocessed.json``, the candidate's lines as the compiler preprocessed them (``-save-temps``,
read by the build-policy checks of verifier.gates.hack_build) and the files it included. Inside the
verifier's runner, :func:`load_c` sends its actual arguments to the monitor, which builds them in a
confined builder, checks the library and places it where the runner can only read it
(verifier.sandbox.loaders); outside it, :func:`load_c` compiles on demand into the cache.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

COMPILER = "g++"
FLAGS = ("-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=c++17", "-Wl,--no-undefined")
# Libraries linked when the source includes their header: {header: linker flag}.
HEADER_LIBRARIES = {"sleef.h": "-lsleef"}
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)

# Set in the verifier's runner (verifier.sandbox.loaders.BuildClient): the monitor builds every call.
_CLIENT = None
CALLS = [0]  # native calls made through load_c wrappers (the runner reports them per call)


class NativeBuildError(RuntimeError):
    """The native source failed to compile or load; the message holds trimmed diagnostics."""


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    library: str
    diagnostics: str
    seconds: float
    cached: bool
    preprocessed: str = ""  # the source's lines after preprocessing (line numbers kept)
    includes: tuple[str, ...] = ()  # every file the preprocessor read


def link_flags(source: str) -> tuple[str, ...]:
    """The libraries this source links, from the headers it includes (e.g. <sleef.h> -> -lsleef)."""
    included = set(_INCLUDE.findall(source))
    return tuple(flag for header, flag in HEADER_LIBRARIES.items() if header in included)


@functools.lru_cache(maxsize=None)
def header_available(header: str) -> bool:
    """Whether the compiler finds ``header`` (e.g. "sleef.h": Debian's libsleef-dev is installed)."""
    try:
        proc = subprocess.run([COMPILER, "-fsyntax-only", "-x", "c++", "-"], input=f"#include <{header}>\n",
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def source_key(source: str) -> str:
    return hashlib.sha256("\0".join((_compiler_id(), *FLAGS, *link_flags(source), source)).encode()).hexdigest()


_COMPILER_ID: list[str] = []


def _compiler_id() -> str:
    if not _COMPILER_ID:
        path = shutil.which(COMPILER) or COMPILER
        try:
            version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            version = "unknown"
        _COMPILER_ID.append(f"{path} {version.splitlines()[0] if version else ''}")
    return _COMPILER_ID[0]


def entry_dir(key: str) -> str:
    """Where the library of source ``key`` lives under a build or cache directory."""
    return f"cpu/{key}"


def library_path(cache_dir: Path, source: str) -> Path:
    return Path(cache_dir) / entry_dir(source_key(source)) / "kernel.so"


def build(source: str, cache_dir: Path, timeout_s: float = 120.0) -> BuildResult:
    """Compile ``source`` into the cache (atomic renames), or reuse the cached library."""
    start = time.perf_counter()
    target = library_path(cache_dir, source)
    record = target.with_name("preprocessed.json")
    if target.is_file() and record.is_file():
        return BuildResult(True, str(target), "", time.perf_counter() - start, True, *_read_record(record))
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        src, out = Path(tmp) / "kernel.cpp", Path(tmp) / "kernel.so"
        src.write_text(source)
        try:  # -save-temps: the compiler's own preprocessed text, for the build-policy checks
            proc = subprocess.run([COMPILER, *FLAGS, "-save-temps", str(src), "-o", str(out), *link_flags(source)],
                                  capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
        except subprocess.TimeoutExpired:
            return BuildResult(False, "", f"compiler timed out after {timeout_s:.0f} s",
                               time.perf_counter() - start, False)
        if proc.returncode != 0:
            return BuildResult(False, "", trim_diagnostics(proc.stderr, tmp), time.perf_counter() - start, False)
        preprocessed, includes = _preprocessed(Path(tmp))
        staged = Path(tmp) / "preprocessed.json"
        staged.write_text(json.dumps({"text": preprocessed, "includes": includes}))
        os.replace(staged, record)
        os.replace(out, target)
    return BuildResult(True, str(target), "", time.perf_counter() - start, False, preprocessed, includes)


def _preprocessed(build_tmp: Path) -> tuple[str, tuple[str, ...]]:
    from verifier.gates.hack_build import candidate_lines

    found = sorted(build_tmp.glob("*.ii"))
    return candidate_lines(found[0].read_text(errors="replace")) if found else ("", ())


def _read_record(record: Path) -> tuple[str, tuple[str, ...]]:
    try:
        data = json.loads(record.read_text())
        return str(data.get("text", "")), tuple(str(p) for p in data.get("includes", ()))
    except (OSError, ValueError, AttributeError):
        return "", ()


def trim_diagnostics(text: str, build_dir: str = "", max_lines: int = 25) -> str:
    """Keep the first errors (with their context lines), drop notes and paths of the build dir."""
    if build_dir:
        text = text.replace(str(build_dir) + "/", "")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first_error = next((i for i, ln in enumerate(lines) if re.search(r"\berror\b", ln)), 0)
    kept = lines[max(0, first_error - 2):][:max_lines]
    if len(lines) - first_error > max_lines:
        kept.append(f"... ({len(lines) - first_error - max_lines} more lines)")
    return "\n".join(kept)


# ---- argument types of the ctypes binding ---------------------------------------------------
_POINTER_DTYPES = {"float": "float32", "double": "float64", "int32": "int32", "int": "int32",
                   "int64": "int64", "long": "int64", "int16": "int16", "int8": "int8",
                   "uint8": "uint8", "bool": "bool", "half": "float16", "uint16": "bfloat16",
                   "void": None}
_SCALARS = {"int": ctypes.c_int, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
            "long": ctypes.c_long, "size_t": ctypes.c_size_t, "float": ctypes.c_float,
            "double": ctypes.c_double}


def _parse_signature(fn_name: str, signature: str) -> list[tuple[str, str | None]]:
    """'const float*, float*, int64' -> [("ptr", "float32"), ("ptr", "float32"), ("int64", None)]."""
    parsed = []
    for i, raw in enumerate(p.strip() for p in signature.split(",") if p.strip()):
        kind = raw.replace("const ", "").replace(" ", "")
        if kind.endswith("*"):
            base = kind[:-1]
            if base not in _POINTER_DTYPES:
                raise NativeBuildError(f"load_c: {fn_name}: argument {i}: unknown pointer type {raw!r}")
            parsed.append(("ptr", _POINTER_DTYPES[base]))
        elif kind in _SCALARS:
            parsed.append((kind, None))
        else:
            raise NativeBuildError(f"load_c: {fn_name}: argument {i}: unknown type {raw!r} "
                                   f"(use float*, const float*, int64, int, float, double, ...)")
    return parsed


class NativeFunction:
    """A ctypes function taking tensors for pointer arguments (checked: CPU, contiguous, dtype)."""

    def __init__(self, name: str, cfunc, signature: list[tuple[str, str | None]]):
        self.name, self._cfunc, self._signature = name, cfunc, signature
        cfunc.argtypes = [ctypes.c_void_p if kind == "ptr" else _SCALARS[kind] for kind, _ in signature]
        cfunc.restype = None

    def __call__(self, *args):
        if len(args) != len(self._signature):
            raise TypeError(f"{self.name}: expected {len(self._signature)} arguments, got {len(args)}")
        converted = [self._convert(i, a, kind, dtype) for i, (a, (kind, dtype)) in enumerate(zip(args, self._signature))]
        CALLS[0] += 1
        self._cfunc(*converted)

    def _convert(self, i: int, value, kind: str, dtype: str | None):
        if kind != "ptr":
            return value
        import torch

        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{self.name}: argument {i} must be a torch.Tensor, got {type(value).__name__}")
        if value.device.type != "cpu" or not value.is_contiguous():
            raise TypeError(f"{self.name}: argument {i} must be a contiguous CPU tensor (call .contiguous())")
        if dtype is not None and str(value.dtype).removeprefix("torch.") != dtype:
            raise TypeError(f"{self.name}: argument {i} must have dtype {dtype}, got {value.dtype}")
        return value.data_ptr()


class NativeLibrary:
    def __init__(self, path: str, functions: dict[str, str]):
        try:
            self._lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as exc:
            raise NativeBuildError(f"load_c: cannot load the compiled library: {exc}") from None
        for name, signature in functions.items():
            try:
                cfunc = getattr(self._lib, name)
            except AttributeError:
                raise NativeBuildError(f"load_c: function {name!r} not found in the library "
                                       f"(declare it extern \"C\")") from None
            setattr(self, name, NativeFunction(name, cfunc, _parse_signature(name, signature)))


def load_c(source: str, functions: dict[str, str], cache_dir: str | Path | None = None) -> NativeLibrary:
    """Compile (or reuse) ``source`` and bind ``functions`` ({name: "argument types"})."""
    if not isinstance(source, str) or not isinstance(functions, dict) or not functions:
        raise NativeBuildError("load_c(source: str, functions: dict[name, signature]) expected")
    if _CLIENT is not None:  # inside the verifier: the monitor builds and checks, the runner only loads
        where = _CLIENT.build("load_c", {"source": source, "functions": dict(functions)})
        if not _CLIENT.load:
            from verifier.sandbox.loaders import NotLoadedHere

            return NotLoadedHere("load_c library")
        return NativeLibrary(str(Path(where) / "kernel.so"), functions)
    from verifier.settings import default_cache_dir

    result = build(source, Path(cache_dir) if cache_dir else default_cache_dir())
    if not result.ok:
        raise NativeBuildError(f"load_c: compilation failed:\n{result.diagnostics}")
    return NativeLibrary(result.library, functions)
