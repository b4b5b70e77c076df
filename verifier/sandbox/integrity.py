"""Runtime integrity checks inside the sandbox child (the harness side of the hack gate).

What static checks cannot see: a snapshot of process-global state (timer and torch function
identities, thread settings, default dtype, environment, affinity, backend flags) taken before the
candidate is imported and compared after every phase; an ATen dispatch trace of ``forward``
(torch compute called from Python or from C++ shows up here); the count of native calls; input
immutability; output type, device, aliasing, freshness and late writes; the OS thread count.

Checks run on the tensors the candidate saw (on the backend's device), after the backend's
``synchronize`` so queued device work has finished before anything is read.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from verifier import cpu_native
from verifier.sandbox.device_io import on_device

# ATen ops forward may dispatch: allocation, views/metadata and copies (the contract).
ALLOWED_ATEN = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "zero_", "fill_",
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "permute", "transpose", "t",
    "unsqueeze", "squeeze", "expand", "slice", "select", "split", "split_with_sizes", "chunk",
    "unbind", "narrow", "alias", "detach", "clone", "copy_", "_to_copy", "contiguous", "lift_fresh",
    "lift_fresh_copy", "unflatten", "flatten", "movedim", "_local_scalar_dense", "resize_", "view_as",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "dim", "size",
    "stride", "set_", "_has_compatible_shallow_copy_type", "scalar_tensor", "expand_as", "reshape_as",
}


class AtenTrace(TorchDispatchMode):
    """Records the ATen ops dispatched while active (Python- and C++-originated alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.forbidden: list[str] = []

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # no torch.compile here; skipping would import torch._dynamo (~2-5 s)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._overloadpacket.__name__
        if name not in ALLOWED_ATEN and len(self.forbidden) < 5:
            self.forbidden.append(f"aten::{name}")
        return func(*args, **(kwargs or {}))


def _identities() -> dict[str, int]:
    ids = {f"time.{n}": id(getattr(time, n)) for n in ("perf_counter", "perf_counter_ns", "time", "monotonic",
                                                        "monotonic_ns", "process_time", "sleep")}
    for prefix, namespace in (("torch.", vars(torch)), ("F.", vars(F)), ("torch.Tensor.", vars(torch.Tensor)),
                              ("torch.nn.Module.", vars(torch.nn.Module)), ("torch._C._TensorBase.", vars(torch._C.TensorBase))):
        for name, value in namespace.items():
            if callable(value) and not isinstance(value, type):
                ids[prefix + name] = id(value)
    return ids


def _flags() -> dict[str, object]:
    return {
        "num_threads": torch.get_num_threads(), "num_interop_threads": torch.get_num_interop_threads(),
        "default_dtype": str(torch.get_default_dtype()), "mkldnn": torch.backends.mkldnn.enabled,
        "deterministic": torch.are_deterministic_algorithms_enabled(), "grad": torch.is_grad_enabled(),
        "affinity": sorted(os.sched_getaffinity(0)), "matmul_precision": torch.get_float32_matmul_precision(),
        "environ": sorted(os.environ.items()),
    }


def warm_up() -> None:
    """Enter a dispatch trace once before the snapshot: the first use imports torch._dynamo, which
    wraps torch.manual_seed and sets TORCHINDUCTOR_CACHE_DIR (not the candidate's doing)."""
    with torch.no_grad(), AtenTrace():
        torch.empty(1)


class Snapshot:
    """Global state before the candidate is imported; :meth:`changes` lists what differs now."""

    def __init__(self) -> None:
        self.identities = _identities()
        self.flags = _flags()

    def changes(self) -> list[str]:
        now_ids, now_flags = _identities(), _flags()
        changed = [k for k, v in self.flags.items() if now_flags.get(k) != v]
        changed += [k for k, v in self.identities.items() if now_ids.get(k) != v]
        return changed


def os_thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    (a0, a1), (b0, b1) = _storage_span(a), _storage_span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def as_outputs(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


class IntegrityError(Exception):
    """A runtime integrity violation (reported as a failed hack gate)."""


def guarded_call(model, inputs: list, previous: list[tuple[torch.Tensor, torch.Tensor]],
                 device: torch.device, synchronize: Callable[[], None]) -> list[torch.Tensor]:
    """Call the candidate under the dispatch trace; enforce the per-call runtime contract.

    ``inputs`` are already on ``device``; outputs must be plain tensors on it too.
    ``previous`` holds (output, copy) pairs of earlier calls, kept alive: they must not change
    and the new outputs must not reuse their storage (fresh outputs, no replay buffers).
    ``synchronize`` (the backend's) runs after the call, before any result is read.
    """
    pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    calls_before = cpu_native.CALLS[0]
    trace = AtenTrace()
    with torch.no_grad(), trace:
        result = model(*inputs)
    synchronize()
    if trace.forbidden:
        raise IntegrityError(f"torch compute traced in forward: {', '.join(trace.forbidden)}")
    if cpu_native.CALLS[0] == calls_before:
        raise IntegrityError("forward made no native call (the native kernel never ran)")
    outputs = as_outputs(result)
    for i, out in enumerate(outputs):
        if type(out) is not torch.Tensor:
            raise IntegrityError(f"output {i} is a {type(out).__name__}, not a plain torch.Tensor")
        if not on_device(out, device):
            raise IntegrityError(f"output {i} is on {out.device}, expected {device}")
    for x, p in zip(inputs, pristine):
        if isinstance(x, torch.Tensor) and not torch.equal(x, p):
            raise IntegrityError("forward modified its inputs")
    for i, out in enumerate(outputs):
        for x in inputs:
            if isinstance(x, torch.Tensor) and overlaps(out, x):
                raise IntegrityError(f"output {i} aliases an input")
        for old, old_copy in previous:
            if overlaps(out, old):
                raise IntegrityError(f"output {i} reuses the storage of an earlier output (outputs must be fresh)")
    for old, old_copy in previous:
        if not torch.equal(old, old_copy) and not (torch.isnan(old_copy).any() and torch.equal(torch.isnan(old), torch.isnan(old_copy))):
            raise IntegrityError("an earlier output changed after a later call (shared output buffer)")
    return outputs


def check_late_writes(outputs: list[torch.Tensor], synchronize: Callable[[], None], delay_s: float = 0.02) -> None:
    """C2: work on a stray thread (or a later launch) keeps writing after forward returned."""
    copies = [o.clone() for o in outputs]
    time.sleep(delay_s)
    synchronize()
    for o, c in zip(outputs, copies):
        if not torch.equal(o, c) and not torch.isnan(c).any():
            raise IntegrityError("the output changed after forward returned (work continues on another thread)")
