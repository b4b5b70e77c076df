"""Fast random fills for the timed calls' input sets: building the native library (monitor side) and
standing in for torch's random functions with it (reference-worker side, verifier.sandbox.drawing).

Every call of a timed window needs an input set of its own, and a task's ``get_inputs()`` draws them with
torch's CPU generator: a scalar Mersenne Twister, ~5 ns an element for ``randn`` and ~7 for ``rand`` on
the machine this was measured on. For a memory-bound kernel that is several times the call itself, so
drawing was the largest part of a verification's seconds (``benchmarks/verify_speed``). ``native/fill.c``
fills float32 memory with uniform or normal values from a seed at ~1.2 ns an element for normals and
~0.2 for uniforms (one thread; vectorised xoshiro128+ and polynomial logarithm, cosine and sine; torch's own
24-bit floats and its Box-Muller pairing of element j with j + 8 in every 16-element block, so a set drawn
here is shaped like one torch drew).

Only the timed sets use it: the trial plan's sets (the audits, the float64 check) keep torch's global
generator, bit for bit. A timed set's values need only the task's distribution and freshness (a kernel
must not meet an input it met before), not torch's exact stream, and they stay a function of the set's
secret seed, whichever thread draws them. What is stood in for (:func:`stand_in`): ``randn``, ``rand``,
``randn_like``, ``rand_like`` and ``Tensor.normal_`` / ``Tensor.uniform_`` on CPU float32 (a task's
float32 draws are cast to its dtype afterwards, verifier.sandbox.inputs); any other call, argument or
dtype (float16 and bfloat16 too: torch draws them on coarser grids, never reaching 1.0, which a float32
value cast would), and normal draws of fewer than 16 elements, go to torch with the set's own generator. Where the library cannot
be built (no C compiler), every call does.

The library is built once per machine into ``$XDG_CACHE_HOME/evokernel/fill/<key>/`` (the source,
compiler, flags and CPU in the key), like the machine's peaks, and read by the reference worker.
``EVOKERNEL_TORCH_DRAW=1`` in the monitor's environment turns it off (benchmarks compare the two).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import itertools
import math
import os
import platform
import shutil
import subprocess
import threading
from pathlib import Path

from verifier.settings import user_cache
from verifier.sandbox import native_build

SOURCE = Path(__file__).parent / "native" / "fill.c"
OFF_ENV = "EVOKERNEL_TORCH_DRAW"
NATIVE_FILL, TORCH_GENERATOR = "native fill", "torch's generator"  # what drew a worker's timed sets (msg.Ready.draw)
NORMAL_MIN = 16  # torch draws fewer normals another way (no 16-element Box-Muller blocks): left to torch
_BUILD_LOCK = threading.Lock()


def _cpu_flags() -> frozenset[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def _flags() -> list[str]:
    flags = ["-O3", "-ffast-math", "-fopenmp-simd", "-fPIC", "-w"]  # compile only: linked without -ffast-math
    if platform.machine() in ("x86_64", "AMD64") and {"avx2", "fma"} <= _cpu_flags():
        flags += ["-mavx2", "-mfma"]  # 8 lanes a register, fused multiply-adds
    return flags


def cache_root() -> Path:
    return user_cache("fill")


@functools.lru_cache(maxsize=None)
def _library(root: Path) -> tuple[Path | None, str]:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None, "no C compiler on PATH"
    flags = _flags()
    try:
        version = native_build.compiler_version(compiler)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot identify the compiler: {exc}"
    key = hashlib.sha256("\0".join((SOURCE.read_text(), compiler, version, *flags, "-c", platform.machine())).encode())
    # linked apart, without -ffast-math: GCC would link crtfastmath.o, which flushes every subnormal in the
    # loading process (the reference worker's outputs among them) for as long as it runs
    return native_build.build_once(root / key.hexdigest()[:24] / "fill.so",
                                   lambda obj: [compiler, *flags, "-c", str(SOURCE), "-o", str(obj)],
                                   "the fill library", 120.0,
                                   link_for=lambda obj, out: [compiler, "-shared", str(obj), "-o", str(out), "-lm"])


def library() -> tuple[Path | None, str]:
    """(the built library, "") or (None, why not): built once per machine, then read from the cache.
    ``EVOKERNEL_TORCH_DRAW=1`` turns it off (torch's generator draws every set, as before the fill)."""
    if os.environ.get(OFF_ENV, "") not in ("", "0"):
        return None, f"{OFF_ENV} is set"
    with _BUILD_LOCK:
        return _library(cache_root())


def drawn_with(draw: str, why_not_fill: str) -> str:
    """What a verdict's facts say drew the timed inputs: the worker's own word, and why it was not the native
    fill where the library could not be built or loaded (a user who sees seconds go to drawing can act on it)."""
    if draw != TORCH_GENERATOR:
        return draw
    return f"{draw} ({why_not_fill or 'the native fill library could not be loaded'})"


# ---- reference-worker side ---------------------------------------------------------------------------
class Fill:
    """The loaded library: fills contiguous CPU float32 tensors in place."""

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        self.normal_f32 = lib.evokernel_fill_normal_f32
        self.uniform_f32 = lib.evokernel_fill_uniform_f32
        for fn in (self.normal_f32, self.uniform_f32):
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64]
            fn.restype = None

    def fill(self, tensor, normal: bool, seed: int) -> None:
        if tensor.numel():
            (self.normal_f32 if normal else self.uniform_f32)(tensor.data_ptr(), tensor.numel(), seed)


def load(path: str) -> Fill | None:
    """The library at ``path``, or None (torch's generator is used instead) where it cannot be loaded."""
    try:
        return Fill(path) if path else None
    except (OSError, AttributeError):
        return None


def call_seed(base: int, call: int) -> int:
    """The seed of the ``call``-th random call of a set drawn from seed ``base``: independent streams."""
    return int.from_bytes(hashlib.blake2b(f"{base}:{call}".encode(), digest_size=8).digest(), "little")


_FACTORY_KWARGS = frozenset({"dtype", "device", "layout", "requires_grad", "pin_memory"})
_LIKE_KWARGS = frozenset({"dtype", "device", "layout", "requires_grad", "memory_format"})


def stand_in(fill: Fill, func, args: tuple, kwargs: dict, seed: int, alloc=None):
    """``func(*args, **kwargs)`` computed with ``fill``, or None where it is not one of the calls stood in
    for (the caller then calls torch). ``alloc(shape)``: where a new float32 tensor is filled (a place in the
    arena the set is drawn into: verifier.sandbox.drawing.ArenaSlots), or None for a tensor of its own."""
    import torch

    normal = func in (torch.randn, torch.randn_like, torch.Tensor.normal_)
    if func in (torch.randn, torch.rand):
        size = _size(args)
        if size is None or not set(kwargs) <= _FACTORY_KWARGS or not _plain_cpu(kwargs) or kwargs.get("pin_memory"):
            return None
        dtype = kwargs.get("dtype") or torch.get_default_dtype()
        out = _filled(fill, size, dtype, normal, seed, alloc)
        return out.requires_grad_() if out is not None and kwargs.get("requires_grad") else out
    if func in (torch.randn_like, torch.rand_like):
        if len(args) != 1 or not set(kwargs) <= _LIKE_KWARGS or not _plain_cpu(kwargs):
            return None
        like = args[0]
        memory_format = kwargs.get("memory_format", torch.preserve_format)
        if (not isinstance(like, torch.Tensor) or like.device.type != "cpu" or like.layout != torch.strided
                or memory_format not in (torch.preserve_format, torch.contiguous_format)
                or not like.is_contiguous()):
            return None
        out = _filled(fill, tuple(like.shape), kwargs.get("dtype") or like.dtype, normal, seed, alloc)
        return out.requires_grad_() if out is not None and kwargs.get("requires_grad") else out
    if func in (torch.Tensor.normal_, torch.Tensor.uniform_):
        return _in_place(fill, args, kwargs, normal, seed)
    return None


def normals(fill: Fill, seed: int):
    """``normal(shape)``: a new float32 tensor of standard normals from ``fill``, each call a stream of its own
    derived from ``seed``; None for a shape it leaves to torch (fewer than NORMAL_MIN elements)."""
    import torch

    calls = itertools.count(1)

    def normal(shape: tuple[int, ...]):
        return _filled(fill, tuple(shape), torch.float32, True, call_seed(seed, next(calls)))
    return normal


def _size(args: tuple) -> tuple[int, ...] | None:
    import torch

    size = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else tuple(args)
    return size if all(type(d) is int and d >= 0 for d in size) else None


def _plain_cpu(kwargs: dict) -> bool:
    import torch

    device = kwargs.get("device")
    layout = kwargs.get("layout")
    return (device is None or torch.device(device).type == "cpu") and layout in (None, torch.strided)


def _filled(fill: Fill, size: tuple[int, ...], dtype, normal: bool, seed: int, alloc=None):
    import torch

    if dtype != torch.float32 or (normal and math.prod(size) < NORMAL_MIN):
        return None
    out = alloc(size) if alloc is not None else None
    if out is None:
        out = torch.empty(size, dtype=torch.float32)
    fill.fill(out, normal, seed)
    return out


def _in_place(fill: Fill, args: tuple, kwargs: dict, normal: bool, seed: int):
    """``tensor.normal_(mean, std)`` / ``tensor.uniform_(low, high)`` on a contiguous CPU float tensor."""
    import torch

    names = ("mean", "std") if normal else ("from", "to")
    if not args or len(args) > 3 or not set(kwargs) <= set(names):
        return None
    tensor = args[0]
    values = dict(zip(names, args[1:]), **kwargs)
    first, second = values.get(names[0], 0.0), values.get(names[1], 1.0)
    if (not isinstance(tensor, torch.Tensor) or type(tensor) is not torch.Tensor or tensor.device.type != "cpu"
            or tensor.layout != torch.strided or not tensor.is_contiguous() or tensor.requires_grad
            or tensor.dtype != torch.float32
            or not all(type(v) in (int, float) for v in (first, second))):
        return None
    if normal and tensor.numel() < NORMAL_MIN:
        return None
    fill.fill(tensor, normal, seed)
    scale, shift = (second, first) if normal else (second - first, first)
    with torch.no_grad():
        if scale != 1.0:
            tensor.mul_(scale)
        if shift != 0.0:
            tensor.add_(shift)
    return tensor
