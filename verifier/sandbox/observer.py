"""Whether ``forward`` computes with torch, observed in the runner, counted where the monitor reads it.

The runner loads a small native observer (``native/observer.cpp``) before any candidate code: a
global ATen RecordFunction callback that sees every operator the dispatcher runs (called from Python,
from C++, or from a load_inline extension) and counts, once armed, all of them and those outside
:data:`ALLOWED_OPS` (allocation, views, copies: what a native kernel's ``forward`` legitimately
dispatches) into a page of shared memory (:class:`ObserverPage`). The runner arms it once ``ModelNew``
is constructed and never disarms it, so from then on every call, checked or timed, is observed alike.
The monitor reads the page itself after each call:

- ``forbidden`` grew: forward computed with torch (the names say which operators);
- ``total`` did not grow although the runner's own copy of the outputs into the arena is an operator:
  the observer was switched off or removed (the callbacks cleared, record functions disabled), which
  only code out to defeat it does.

The library is built once per machine and torch installation by the trusted side (:func:`library`),
with the compiler and torch's own headers, and cached. Where it cannot be built, the runner observes
with a Python ``TorchDispatchMode`` instead (weaker: Python code that reaches the interpreter's
internals can pop it), and the verdict warns.

Also the allow-list's only owner: what a native kernel's ``forward`` may dispatch.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from verifier.sandbox import native_build

SOURCE = Path(__file__).parent / "native" / "observer.cpp"
PAGE_BYTES = 4096
MAGIC = 0x45564F4B4F425356  # "EVOKOBSV"
_HEAD = struct.Struct("<QQQQ")
NAME_SLOTS, NAME_BYTES = 8, 64

# ATen operators forward may dispatch: allocation, views and metadata, copies and data movement (the contract).
ALLOWED_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full full_like
new_zeros new_ones new_full zero_ fill_ view _unsafe_view reshape _reshape_alias as_strided permute transpose t
unsqueeze squeeze expand slice select split split_with_sizes chunk unbind narrow alias detach clone copy_
_to_copy to contiguous lift_fresh lift_fresh_copy unflatten flatten movedim _local_scalar_dense resize_ view_as
sym_size sym_stride sym_numel sym_storage_offset is_contiguous dim size stride set_ _has_compatible_shallow_copy_type
scalar_tensor expand_as reshape_as numel is_same_size is_nonzero item _pin_memory is_pinned record_stream
resolve_conj resolve_neg conj _conj cat stack constant_pad_nd
""".split())
# operator namespaces torch registers (more are read from the dispatcher: :func:`torch_namespaces`). An
# operator outside aten is torch's unless its namespace is proven the candidate's (:func:`own_namespaces`)
TORCH_NAMESPACES = frozenset("""
aten prims prim quantized _quantized mkl mkldnn mkldnn_prepacked onednn sparse _c10d_functional
_c10d_functional_autograd c10d inductor inductor_prims fbgemm _nested torchvision cuda xpu mps npu profiler
quantization rngprims debugprims _native _dtensor symm_mem static_runtime export _test debug_mode_ops
""".split())
OWN_OFFSET, OWN_SLOTS = 1024, 8
_LIBRARY_MACRO = re.compile(r"\bTORCH_LIBRARY(?:_FRAGMENT|_IMPL)?\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Observation:
    total: int
    forbidden: int
    armed: bool
    names: tuple[str, ...]
    valid: bool = True  # the page holds the observer's magic (not overwritten)


class ObserverPage:
    """The shared page: created and read by the monitor, written by the runner's observer."""

    def __init__(self, arena) -> None:  # verifier.sandbox.arena.Arena of PAGE_BYTES
        self.arena = arena
        if arena.owner:
            arena.map[: _HEAD.size] = _HEAD.pack(MAGIC, 0, 0, 0)

    def allow_namespaces(self, namespaces: tuple[str, ...]) -> None:
        """Monitor side: the operator namespaces proven the candidate's own (:func:`own_namespaces`)."""
        for k in range(OWN_SLOTS):
            name = namespaces[k].encode()[: NAME_BYTES - 1] if k < len(namespaces) else b""
            start = OWN_OFFSET + k * NAME_BYTES
            self.arena.map[start: start + NAME_BYTES] = name.ljust(NAME_BYTES, b"\0")

    def own(self) -> tuple[str, ...]:
        raw = (bytes(self.arena.map[OWN_OFFSET + k * NAME_BYTES: OWN_OFFSET + (k + 1) * NAME_BYTES])
               for k in range(OWN_SLOTS))
        return tuple(n for n in (r.split(b"\0")[0].decode(errors="replace") for r in raw) if n)

    def read(self) -> Observation:
        magic, total, forbidden, armed = _HEAD.unpack(bytes(self.arena.map[: _HEAD.size]))
        names = []
        for k in range(min(forbidden, NAME_SLOTS)):
            raw = bytes(self.arena.map[_HEAD.size + k * NAME_BYTES: _HEAD.size + (k + 1) * NAME_BYTES])
            names.append(raw.split(b"\0")[0].decode(errors="replace"))
        return Observation(total, forbidden, bool(armed), tuple(names), magic == MAGIC)


def torch_namespaces() -> frozenset[str]:
    """Every operator namespace torch has: the list above and what its dispatcher holds in this process."""
    try:
        import torch

        registered = {name.split("::", 1)[0] for name in torch._C._dispatch_get_all_op_names()}
    except (ImportError, AttributeError, RuntimeError):
        registered = set()
    return TORCH_NAMESPACES | frozenset(registered)


def own_namespaces(sources: list[str]) -> tuple[str, ...]:
    """Operator namespaces the candidate's checked sources define (``TORCH_LIBRARY(ns, m)`` and its fragment
    and impl forms), none of them torch's: the only custom operators the observer does not count as torch's."""
    found = dict.fromkeys(m.group(1) for text in sources for m in _LIBRARY_MACRO.finditer(text))
    if not found:  # most sources define none: the dispatcher is not asked (importing torch: 1.5-2 s)
        return ()
    torch_own = torch_namespaces()
    return tuple(ns for ns in found if ns not in torch_own)[:OWN_SLOTS]


def torch_package_dir() -> Path | None:
    """torch's package directory, found without importing torch (None: torch is not installed)."""
    spec = find_spec("torch")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def _key(torch_dir: Path, compiler: str) -> str:
    version = native_build.compiler_version(compiler)
    lib = torch_dir / "lib" / "libtorch_cpu.so"
    stamp = f"{lib.stat().st_size}:{lib.stat().st_mtime_ns}" if lib.exists() else "?"
    return hashlib.sha256("\0".join((SOURCE.read_text(), str(torch_dir), stamp, version)).encode()).hexdigest()[:24]


def library(cache_root: Path, timeout_s: float = 300.0) -> tuple[Path | None, str]:
    """(the built observer, "") or (None, why not). Built once into ``cache_root/observer/<key>``."""
    torch_dir = torch_package_dir()
    compiler = shutil.which("g++") or shutil.which("c++")
    if torch_dir is None or not (torch_dir / "include" / "ATen" / "record_function.h").is_file():
        return None, "torch's C++ headers are not installed"
    if compiler is None:
        return None, "no C++ compiler on PATH"
    try:
        target = Path(cache_root) / "observer" / _key(torch_dir, compiler) / "observer.so"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot identify the compiler: {exc}"
    return native_build.build_once(
        target, lambda out: [compiler, "-O2", "-std=c++20", "-fPIC", "-shared", "-w", f"-I{torch_dir / 'include'}",
                             str(SOURCE), "-o", str(out), f"-L{torch_dir / 'lib'}", "-lc10", "-ltorch_cpu",
                             f"-Wl,-rpath,{torch_dir / 'lib'}"],
        "the observer", timeout_s)


# ---- runner side ------------------------------------------------------------------------------------
_PINNED: list = []

class RunnerObserver:
    """Installs the observer in the runner (before candidate code) and arms it (after construction)."""

    def __init__(self, page_arena, library_path: str) -> None:
        import ctypes

        self.page_arena = page_arena
        self.native = None
        self.fallback = None
        view = ctypes.c_char.from_buffer(page_arena.map)
        _PINNED.append((page_arena, view))  # the callback writes there for the rest of the process's life
        address = ctypes.addressof(view)
        if library_path:
            lib = ctypes.CDLL(library_path)
            lib.evokernel_observer_install.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            lib.evokernel_observer_arm.argtypes = []
            lib.evokernel_observer_install(address, "\n".join(sorted(ALLOWED_OPS)).encode())
            self.native = lib
        else:
            from verifier.sandbox.observer_fallback import DispatchCounter

            self.fallback = DispatchCounter(page_arena.map, _HEAD, NAME_BYTES, NAME_SLOTS)

    def arm(self) -> None:
        if self.native is not None:
            self.native.evokernel_observer_arm()
        else:
            self.fallback.arm()
