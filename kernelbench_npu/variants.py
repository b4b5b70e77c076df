"""Backend variants: dtype, size profile, tolerances and the lint profile of each backend.

- ``cpu``: a size profile for a 2-core CPU: constants are shrunk until the meta-device estimate of
  one reference forward is ~4 ms (problems estimated at <= 20 ms keep their sizes); fp32.
- ``ascendc`` (the NPU variant): the original sizes; fp32, optionally fp16; alignment to the NPU's
  32-byte blocks is recorded per task (``notes``), never padded away: tails are part of the task.
  ``triton-ascend`` (Triton kernels for the same NPU) uses the same profile.
- ``cuda``, ``triton``: the original sizes; fp32 (fp16/bf16 optional).

Lint always runs the reference on *this* machine's CPU. For the original-size variants that is a
proxy profile with a larger time and memory budget (``lint_profile`` says so in build.json).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from kernelbench_npu.spec import BACKENDS

DTYPE_ALIASES = {"fp32": "float32", "float32": "float32", "fp16": "float16", "float16": "float16",
                 "half": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}
_SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
MiB = 1 << 20
_NPU_BACKENDS = ("ascendc", "triton-ascend")  # the NPU size profile: original sizes, 32-byte alignment notes


class VariantError(ValueError):
    """An unknown backend or an unsupported dtype for it."""


@dataclass(frozen=True)
class Variant:
    backend: str
    dtypes: tuple[str, ...]
    size_profile: str  # "cpu-2core" | "original"
    target_ms: float | None  # cost-model target of the size profile (None: keep original sizes)
    keep_below_ms: float | None  # estimates at or below this keep their original sizes
    alignment_bytes: int | None  # NPU block size recorded per task (ascendc)
    lint_profile: str
    lint_time_budget_ms: float  # a reference forward slower than this on this CPU is quarantined
    lint_memory_budget_bytes: int  # inputs + output + parameters
    lint_task_timeout_s: float  # a lint that takes longer is killed and the task quarantined

    def as_dict(self) -> dict:
        return asdict(self)


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
        return Variant(backend, names, "cpu-2core", 4.0, 20.0, None,
                       "cpu-2core: the scaled reference on this CPU", 250.0, 256 * MiB, 60.0)
    return Variant(backend, names, "original", None, None, 32 if backend in _NPU_BACKENDS else None,
                   f"cpu-proxy: {backend} sizes, reference run on this CPU with a larger budget",
                   5000.0, 2048 * MiB, 180.0)


def _normalise_dtype(name: str) -> str:
    key = name.strip().lower()
    if key not in DTYPE_ALIASES:
        raise VariantError(f"dtype {name!r} unknown (choose from fp32, fp16, bf16)")
    return DTYPE_ALIASES[key]


def short_dtype(dtype: str) -> str:
    return _SHORT.get(dtype, dtype)


def tolerances(dtype: str, output_scale: float) -> tuple[float, float]:
    """(atol, rtol) for a dtype, scale-aware: atol grows with max|reference| above 1.

    fp32: atol = 1e-5 * max(1, scale) rounded up to one significant digit, capped at 1e-4;
    rtol 1e-4. fp16/bf16: atol = 1e-2 * max(1, scale) (capped at 1e-1), rtol 1e-2.
    """
    scale = max(1.0, float(output_scale)) if math.isfinite(output_scale) else 1.0
    if dtype == "float32":
        return _ceil_1sig(min(1e-5 * scale, 1e-4)), 1e-4
    return _ceil_1sig(min(1e-2 * scale, 1e-1)), 1e-2


def _ceil_1sig(x: float) -> float:
    exponent = math.floor(math.log10(x))
    mantissa = math.ceil(round(x / 10 ** exponent, 6))
    return float(f"{mantissa}e{exponent}")


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
