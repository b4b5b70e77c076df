"""Backend variants: dtypes, the size profile, and how each task is linted on this machine.

- ``cpu``: the ``cpu-2core`` size profile: every large dimension shrinks together
  (:mod:`kernelbench_npu.sizing`) until the meta-device estimate of one reference forward is
  ~4 ms (problems estimated at <= 20 ms keep their sizes); fp32, optionally fp16/bf16.
- ``ascendc`` (the NPU variant): the original sizes; fp32, optionally fp16; alignment to the NPU's
  32-byte blocks is recorded per task (``notes``), never padded away: tails are part of the task.
  ``triton-ascend`` (Triton kernels for the same NPU) uses the same profile. Without an NPU their
  correctness runs at the ``interpreter`` sizes (about 1 MiB of inputs, output and parameters,
  every size shrunk together by :mod:`kernelbench_npu.sizing`, whatever the constants look like),
  so these variants lint their references at exactly those sizes.
- ``cuda``, ``triton``: the original sizes; fp32 (fp16/bf16 optional).

Lint always runs the reference on *this* machine's CPU. Sizes are never what quarantines a task:
a task is linted at its own sizes when they fit the ``cpu-2core`` profile, otherwise at the sizes
that profile gives it (same code path, every size-independent check: input dependence,
triviality, determinism, finiteness, rounding noise), or, when even those are beyond the lint
budget (networks whose sizes the architecture pins), on the meta device only. The manifest's
``lint_mode`` says which.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from kernelbench_npu.spec import BACKENDS

DTYPE_ALIASES = {"fp32": "float32", "float32": "float32", "fp16": "float16", "float16": "float16",
                 "half": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}
_SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
MiB = 1 << 20
LINT_TASK_SIZES, LINT_REDUCED, LINT_META = "task sizes", "reduced sizes", "meta device only"
_NPU_BACKENDS = ("ascendc", "triton-ascend")  # the NPU size profile: original sizes, 32-byte alignment notes


class VariantError(ValueError):
    """An unknown backend or an unsupported dtype for it."""


@dataclass(frozen=True)
class SizeProfile:
    """Where the sizer aims: a meta-device time estimate and a memory footprint."""

    name: str
    target_ms: float  # shrink until the estimate is at most this
    keep_below_ms: float  # estimates at or below this keep their original sizes
    memory_bytes: int  # inputs + output + parameters must fit too
    budget_ms: float  # an estimate above this even at the smallest sizes is too slow for the profile
    min_bytes: int = 0  # never shrink inputs + output + parameters below this (a task smaller as written stays)


# Working sets of at least 1 MiB: below it a call's fixed costs (calling forward from Python, allocating
# its outputs: ~10-30 us here) are no longer small against the kernel's work (~0.1 ms per MiB streamed
# at this machine's ~10 GB/s), and only those costs are left to measure (a KernelBench 2D max pool
# went to 2x8x16x16, 31 kB, without it).
CPU_2CORE = SizeProfile("cpu-2core", 4.0, 20.0, 64 * MiB, 250.0, min_bytes=1 * MiB)
# Correctness without the device (Triton's interpreter runs every program instance in numpy): about
# 1 MiB of tensors and a torch forward of ~1 ms, so one interpreted forward of an honest kernel
# takes seconds at most (LayerNorm 16x64x256x256 -> 4x16x32x32; LogSoftmax 4096x393216 -> 32x3072).
INTERPRETER = SizeProfile("interpreter", 1.0, 0.5, 1 * MiB, 25.0)
PROFILES = {p.name: p for p in (CPU_2CORE, INTERPRETER)}


@dataclass(frozen=True)
class Variant:
    backend: str
    dtypes: tuple[str, ...]
    size_profile: str  # "cpu-2core" | "original"
    alignment_bytes: int | None  # NPU block size recorded per task (ascendc)
    lint_profile: str
    lint_task_timeout_s: float  # a lint that takes longer is killed and the task quarantined
    lint_sizes: str = CPU_2CORE.name  # the size profile references are linted at (a PROFILES key)

    @property
    def records_by_shape(self) -> bool:
        """True for the NPU variants: their compile gate records launches on shape-only inputs."""
        return self.backend in _NPU_BACKENDS

    @property
    def shrinks(self) -> bool:
        """True when the variant's tasks take the cpu-2core sizes (else their original sizes)."""
        return self.size_profile == CPU_2CORE.name

    def as_dict(self) -> dict:
        return {**asdict(self), "lint_sizes": asdict(PROFILES[self.lint_sizes])}


_SUPPORTED_DTYPES = {
    "cpu": ("float32", "float16", "bfloat16"),
    "ascendc": ("float32", "float16"),
    "triton-ascend": ("float32", "float16"),
    "cuda": ("float32", "float16", "bfloat16"),
    "triton": ("float32", "float16", "bfloat16"),
}


def variant_for(backend: str, dtypes: tuple[str, ...] | list[str] | None = None) -> Variant:
    """The variant of ``backend`` for the given dtypes (default fp32)."""
    if backend not in BACKENDS:
        raise VariantError(f"backend {backend!r} unknown (choose from {', '.join(BACKENDS)})")
    names = tuple(dict.fromkeys(_normalise_dtype(d) for d in (dtypes or ("float32",))))
    bad = [d for d in names if d not in _SUPPORTED_DTYPES[backend]]
    if bad:
        raise VariantError(f"dtype {bad[0]!r} not supported by the {backend} variant "
                           f"(choose from {', '.join(_SUPPORTED_DTYPES[backend])})")
    if backend == "cpu":
        return Variant(backend, names, CPU_2CORE.name, None, "cpu-2core: the task's own sizes on this CPU", 180.0)
    if backend in _NPU_BACKENDS:
        return Variant(backend, names, "original", 32, f"cpu-proxy: {backend} sizes; references linted on this CPU "
                       f"at the {INTERPRETER.name} sizes correctness uses without an NPU, or on the meta device",
                       180.0, INTERPRETER.name)
    return Variant(backend, names, "original", None,
                   f"cpu-proxy: {backend} sizes; references linted on this CPU at cpu-2core sizes "
                   "(size-independent checks), or on the meta device", 180.0)


def _normalise_dtype(name: str) -> str:
    key = name.strip().lower()
    if key not in DTYPE_ALIASES:
        raise VariantError(f"dtype {name!r} unknown (choose from fp32, fp16, bf16)")
    return DTYPE_ALIASES[key]


def short_dtype(dtype: str) -> str:
    return _SHORT.get(dtype, dtype)


def alignment_note(input_shapes, output_shape, dtype: str, alignment_bytes: int | None) -> str:
    """For the NPU variant: which tensors' last dimension is not a whole number of 32-byte blocks."""
    if alignment_bytes is None:
        return ""
    itemsize = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
    unaligned = []
    named = [(f"input{i}", s) for i, s in enumerate(input_shapes) if s] + [("output", output_shape)]
    for name, shape in named:
        if shape and (shape[-1] * itemsize) % alignment_bytes:
            unaligned.append(f"{name} last dim {shape[-1]} x {itemsize} B")
    if not unaligned:
        return f"aligned: every last dimension is a multiple of {alignment_bytes} B"
    return f"unaligned tails (need {alignment_bytes} B block handling): " + "; ".join(unaligned)


def finite_or(value: float, default: float) -> float:
    return value if math.isfinite(value) else default
