"""The work one call of a task must do, counted on the reference in the trusted reference worker.

Bytes: every input, output, parameter and buffer once (tensors counted by storage, so a view or
an output aliasing an input is not counted twice): the lower bound of the traffic any kernel needs.
FLOPs: torch's FlopCounterMode (matmul, convolution, attention: its registered formulas) plus, for
every other compute op the reference dispatches, one FLOP per output element (an elementwise op
or a reduction's combine step; views, copies and allocations count nothing). The second part is
an analytic lower bound: a GELU costs more than one FLOP per element on any machine.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from verifier.roofline import Workload

_FREE_OPS = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
             "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "copy_", "clone", "contiguous",
             "_to_copy", "to", "detach", "alias", "lift_fresh", "t", "transpose", "permute", "view",
             "reshape", "_unsafe_view", "expand", "squeeze", "unsqueeze", "slice", "select", "as_strided",
             "split", "split_with_sizes", "chunk", "unbind", "narrow", "flatten", "unflatten", "cat", "stack",
             "set_", "resize_", "fill_", "zero_", "arange", "scalar_tensor", "_local_scalar_dense", "item"}


class _ElementwiseCounter(TorchDispatchMode):
    """One FLOP per output element for each compute op FlopCounterMode has no formula for."""

    def __init__(self, counted: set) -> None:
        super().__init__()
        self.counted, self.flops = counted, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        packet = func.overloadpacket
        if packet in self.counted or packet.__name__.rstrip("_") in _FREE_OPS or func.is_view:
            return out
        for tensor in _tensors(out):
            if tensor.is_floating_point() or tensor.is_complex():
                self.flops += tensor.numel()
        return out


def count_workload(model: torch.nn.Module, inputs: list) -> Workload:
    """Run ``model(*inputs)`` once under the counters (no grad) and return its workload."""
    flop_mode = FlopCounterMode(display=False)
    elementwise = _ElementwiseCounter(set(flop_mode.flop_registry))
    with torch.no_grad(), flop_mode, elementwise:
        result = model(*inputs)
    tensors = list(_tensors(inputs)) + list(_tensors(result)) + list(model.parameters()) + list(model.buffers())
    return Workload(bytes_moved=_unique_bytes(tensors), flops=int(flop_mode.get_total_flops()) + elementwise.flops)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _unique_bytes(tensors: list[torch.Tensor]) -> int:
    seen, total = set(), 0
    for tensor in tensors:
        storage = tensor.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if key in seen:
            continue
        seen.add(key)
        total += tensor.numel() * tensor.element_size() if tensor.numel() else 0
    return total
