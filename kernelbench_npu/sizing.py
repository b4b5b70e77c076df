"""Size constants of a problem file, a meta-device cost model, and the size profile that scales them.

A problem's *size constants* are its top-level assignments of an int literal or a tuple/list of int
literals (``batch_size = 16``, ``input_shape = (128, 4095)``). Derived constants
(``out_features = in_features * 2``) follow automatically because the file is re-executed after the
literals are rewritten in the source text.

The cost model runs ``Model(*get_init_inputs())(*get_inputs())`` on PyTorch's ``meta`` device under
a dispatch mode that sums FLOPs (matmul/conv family) and bytes moved per aten op; no real tensor is
allocated. Its estimate is deterministic, so the scaled shapes (and the build's bytes) do not depend
on how busy the machine is. Calibration (2 threads, torch 2.13 CPU): ~40 GFLOP/s for GEMM/conv,
~3 GB/s for large elementwise traffic (first-touch included), ~10 us per op.

Scaling rule (cpu size profile): shrink ``*batch*`` constants first (halving, floor 2), then every
other scalable constant by one common factor (steps of 0.8) until the estimate is at most the
target. Geometry is never scaled: names with kernel/stride/pad/dilation/group/head/axis/classes/
layers, and values below 16. Multiples of 8 stay multiples of min(8, their power-of-two factor);
awkward sizes (not multiples of 8) stay awkward; no dimension drops below 8.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kernelbench_npu.loader import execute

Constant = int | tuple[int, ...]

GFLOPS_PER_S = 40e9
BYTES_PER_S = 3e9
SECONDS_PER_OP = 10e-6
MIN_SCALABLE = 16
MIN_DIM = 8
MIN_BATCH = 2
_GEOMETRY = re.compile(r"kernel|stride|pad|dilation|group|head|axis|classes|layers|reduce|dim_idx", re.I)
_BATCH = re.compile(r"batch", re.I)


@dataclass(frozen=True)
class Cost:
    """Meta-device estimate of one reference forward."""

    flops: int
    bytes_moved: int
    ops: int
    footprint_bytes: int  # inputs + output + parameters and buffers
    input_shapes: tuple[tuple[int, ...] | None, ...]  # None for a Python scalar input
    output_shape: tuple[int, ...]
    output_dtype: str

    @property
    def estimated_ms(self) -> float:
        seconds = self.flops / GFLOPS_PER_S + self.bytes_moved / BYTES_PER_S + self.ops * SECONDS_PER_OP
        return seconds * 1e3


class CostError(RuntimeError):
    """The meta-device run failed (an op without a meta kernel, a shape error after scaling, ...)."""


def size_constants(source: str) -> dict[str, Constant]:
    """The literal size constants of a problem source, in file order."""
    return {name: value for name, value, _node in _constant_nodes(source)}


def _constant_nodes(source: str) -> list[tuple[str, Constant, ast.expr]]:
    found = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = _int_literal(node.value)
        if value is not None:
            found.append((node.targets[0].id, value, node.value))
    return found


def _int_literal(node: ast.expr) -> Constant | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def rewrite_constants(source: str, new_values: dict[str, Constant]) -> str:
    """The source with the given literal constants replaced (everything else byte for byte)."""
    lines = source.splitlines(keepends=True)
    edits = [(node, new_values[name]) for name, old, node in _constant_nodes(source)
             if name in new_values and new_values[name] != old]
    for node, value in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        start, end = node.lineno - 1, node.end_lineno - 1
        text = "".join(lines[start:end + 1])
        prefix_len = node.col_offset
        suffix_start = len(text) - (len(lines[end]) - node.end_col_offset)
        literal = repr(value) if not isinstance(value, tuple) else "(" + ", ".join(map(str, value)) + ("," if len(value) == 1 else "") + ")"
        lines[start:end + 1] = [text[:prefix_len] + literal + text[suffix_start:]]
    return "".join(lines)


def estimate_cost(source: str, dtype: str = "float32", path: str = "<problem>") -> Cost:
    """Run the problem once on the meta device and count FLOPs, bytes and ops (no real allocation)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    torch_dtype = getattr(torch, dtype)
    try:
        namespace = execute(path, source)
        with torch.device("meta"):
            model = namespace["Model"](*namespace["get_init_inputs"]()).eval().to(torch_dtype)
            inputs = [cast_input(x, torch_dtype) for x in namespace["get_inputs"]()]
            counter, bytes_mode = FlopCounterMode(display=False), _BytesMode()
            with torch.no_grad(), counter, bytes_mode:
                out = model(*inputs)
    except Exception as exc:  # noqa: BLE001 - reported to the caller as one line
        raise CostError(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}") from None
    if not isinstance(out, torch.Tensor):
        raise CostError(f"forward returned a {type(out).__name__}, expected one tensor")
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    state = list(model.parameters()) + list(model.buffers())
    footprint = sum(_nbytes(t) for t in tensors + state) + _nbytes(out)
    return Cost(
        flops=int(counter.get_total_flops()), bytes_moved=bytes_mode.bytes_moved, ops=bytes_mode.ops,
        footprint_bytes=footprint,
        input_shapes=tuple(tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in inputs),
        output_shape=tuple(out.shape), output_dtype=str(out.dtype).removeprefix("torch."),
    )


def cast_input(value, torch_dtype):
    """Floating-point tensors take the variant's dtype; integer tensors and scalars stay as they are."""
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(torch_dtype)
    return value


def _nbytes(tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _bytes_mode_class():
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    import torch

    class BytesMode(TorchDispatchMode):
        """Sums bytes read and written by every non-view aten op."""

        def __init__(self):
            super().__init__()
            self.bytes_moved = 0
            self.ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not getattr(func, "is_view", False):
                leaves = tree_leaves((args, kwargs or {}, out))
                self.bytes_moved += sum(_nbytes(t) for t in leaves if isinstance(t, torch.Tensor))
                self.ops += 1
            return out

    return BytesMode


def _BytesMode():  # noqa: N802 - a factory so torch is imported lazily
    return _bytes_mode_class()()


@dataclass(frozen=True)
class SizeProfileResult:
    """The outcome of fitting a problem to a time target."""

    constants: dict[str, Constant]  # adapted values of every size constant
    source: str  # the adapted source
    cost: Cost
    note: str  # how it was scaled, one line


def is_scalable(name: str, value: Constant) -> bool:
    values = value if isinstance(value, tuple) else (value,)
    return not _GEOMETRY.search(name) and any(v >= MIN_SCALABLE for v in values)


def scale_value(name: str, value: Constant, factor: float) -> Constant:
    if isinstance(value, tuple):
        return tuple(_scale_int(v, factor, MIN_DIM) for v in value)
    return _scale_int(value, factor, MIN_BATCH if _BATCH.search(name) else MIN_DIM)


def _scale_int(value: int, factor: float, floor: int) -> int:
    if value < MIN_SCALABLE or factor >= 1.0:
        return value
    grain = min(value & -value, 8)
    new = max(floor, round(value * factor / grain) * grain) if grain > 1 else max(floor, round(value * factor))
    if value % 8 and new % 8 == 0:  # keep awkward sizes awkward (tails matter to NPU/SIMD kernels)
        new += 1
    if value % 2 and new % 2 == 0:
        new += 1
    return min(new, value)


def fit_to_target(source: str, target_ms: float, keep_below_ms: float, dtype: str = "float32",
                  path: str = "<problem>") -> SizeProfileResult:
    """Shrink the size constants until the estimate is at most ``target_ms``.

    Problems already estimated at or below ``keep_below_ms`` keep their sizes. Raises CostError when
    even the original sizes cannot run on the meta device.
    """
    original = size_constants(source)
    cost = estimate_cost(source, dtype, path)
    if cost.estimated_ms <= keep_below_ms:
        return SizeProfileResult(original, source, cost, "original sizes (estimate within budget)")
    batch = {k: v for k, v in original.items() if _BATCH.search(k) and is_scalable(k, v)}
    others = {k: v for k, v in original.items() if k not in batch and is_scalable(k, v)}
    best = SizeProfileResult(original, source, cost, "original sizes (could not shrink)")
    for batch_factor, factor in _schedule(batch, others):
        values = {**original, **{k: scale_value(k, v, batch_factor) for k, v in batch.items()},
                  **{k: scale_value(k, v, factor) for k, v in others.items()}}
        candidate = rewrite_constants(source, values)
        try:
            cost = estimate_cost(candidate, dtype, path)
        except CostError:
            continue
        best = SizeProfileResult(values, candidate, cost, f"scaled: batch x{batch_factor:.3g}, other sizes x{factor:.3g}")
        if cost.estimated_ms <= target_ms:
            return best
    return best


def _schedule(batch: dict, others: dict):
    """(batch factor, other factor) pairs to try, from the mildest shrink to the strongest."""
    batch_factors = [0.5 ** i for i in range(1, 13)] if batch else []
    smallest_batch = 1.0
    for f in batch_factors:
        yield f, 1.0
        smallest_batch = f
        if all(scale_value(k, v, f) == MIN_BATCH or scale_value(k, v, f) == v for k, v in batch.items()):
            break
    if others:
        for i in range(1, 41):
            yield smallest_batch, 0.8 ** i
