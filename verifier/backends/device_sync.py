"""Waiting for a device's queued work, and clearing its cache before a timed window, by device type:
the reference worker's timed calls on a GPU or an NPU use these, and so do the GPU backends' runners
(Backend.synchronize, Backend.flush_cache), so that both sides of a paired measurement start every
window from the same cold cache."""

from __future__ import annotations

from typing import Callable

_BUFFERS: dict[str, object] = {}


def synchronizer(device: str) -> Callable[[], None]:
    import torch

    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.synchronize
    if kind == "npu":
        return lambda: torch.npu.synchronize()  # registered by torch_npu
    return lambda: None


def start_device(device: str = "") -> None:
    """Start ``device``'s context in this process now ("": the accelerator this torch was built for), or raise
    the driver's own error. A sandbox process does this during its trusted start-up, before its seccomp
    filter (a driver's start makes calls the filter refuses), and fails there rather than carry on without
    the device the monitor found (the Triton backend would otherwise fall back to its CPU interpreter)."""
    import torch

    kind = device.split(":")[0] if device else ("cuda" if torch.version.cuda else "npu")
    if kind == "cuda":
        torch.cuda.init()  # raises with the driver's error (e.g. CUDA error 304 where a path it needs is denied)
        torch.cuda.synchronize()
    elif kind == "npu":
        try:
            import torch_npu  # noqa: F401 - registers torch.npu
        except ImportError:
            return  # no NPU runtime in this environment: nothing to start
        torch.npu.synchronize()


def flusher(device: str) -> Callable[[], None] | None:
    """A function that evicts the device's L2 (zeroing a buffer twice its size, allocated once per
    process: what KernelBench and Triton's do_bench do between repetitions); None on the CPU."""
    import torch

    kind = torch.device(device).type
    if kind == "cuda":
        return _flush_cuda
    if kind == "npu":
        from verifier.backends.triton_ascend.device import flush_l2

        return flush_l2
    return None


def _flush_cuda() -> None:
    import torch

    buffer = _BUFFERS.get("cuda")
    if buffer is None:
        l2 = int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0))
        buffer = _BUFFERS["cuda"] = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device="cuda")
    buffer.zero_()
