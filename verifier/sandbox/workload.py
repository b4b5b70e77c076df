"""The work one call of a task must do, counted on the reference in the trusted reference worker.

Bytes: every input, output, parameter and buffer once (tensors counted by storage, so a view or
an output aliasing an input is not counted twice): the lower bound of the traffic any kernel needs.
FLOPs: the formulas torch's flop counter registers (matmul, convolution, attention:
``torch.utils.flop_counter.flop_registry``) plus, for every other compute op the reference
dispatches, one FLOP per output element (an elementwise op or a reduction's combine step; views,
copies and allocations count nothing). The second part is an analytic lower bound: a GELU costs
more than one FLOP per element on any machine.

One dispatch mode applies both. torch wraps a dispatch mode's ``__torch_dispatch__`` so that its first
op imports torch._dynamo (1-2 s of CPU on a quiet machine, 5-9 s under load) unless the class says it
never runs under torch.compile (``_should_skip_dynamo``, read when the class is defined), which this
one does; the monitor still asks for the count once per task and process (verifier.monitor.reference).
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from verifier.roofline import Workload

_FREE_OPS = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
             "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "copy_", "clone", "contiguous",
             "_to_copy", "to", "detach", "alias", "lift_fresh", "t", "transpose", "permute", "view",
             "reshape", "_unsafe_view", "expand", "squeeze", "unsqueeze", "slice", "select", "as_strided",
             "split", "split_with_sizes", "chunk", "unbind", "narrow", "flatten", "unflatten", "cat", "stack",
             "set_", "resize_", "fill_", "zero_", "arange", "scalar_tensor", "_local_scalar_dense", "item"}


class _FlopCounter(TorchDispatchMode):
    """The registered formula's FLOPs for an op that has one; one FLOP per floating output element for
    every other compute op (an op without a formula that decomposes is counted by its parts)."""

    def __init__(self) -> None:
        super().__init__()
        self.flops = 0

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # nothing here runs under torch.compile: no torch._dynamo import on the first op

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func.overloadpacket
        if packet not in flop_registry and not func.is_view:
            with self:
                decomposed = func.decompose(*args, **kwargs)
            if decomposed is not NotImplemented:
                return decomposed
        out = func(*args, **kwargs)
        if packet in flop_registry:
            self.flops += int(flop_registry[packet](*args, **kwargs, out_val=out))
        elif packet.__name__.rstrip("_") not in _FREE_OPS and not func.is_view:
            self.flops += sum(t.numel() for t in _tensors(out) if t.is_floating_point() or t.is_complex())
        return out


def count_workload(model: torch.nn.Module, inputs: list) -> Workload:
    """Run ``model(*inputs)`` once under the counter (no grad) and return its workload."""
    counter = _FlopCounter()
    with torch.no_grad(), counter:
        result = model(*inputs)
    fresh = list(_tensors(inputs)) + list(_tensors(result))
    tensors = fresh + list(model.parameters()) + list(model.buffers())
    return Workload(bytes_moved=_unique_bytes(tensors), flops=counter.flops, fresh_bytes=_unique_bytes(fresh))


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
