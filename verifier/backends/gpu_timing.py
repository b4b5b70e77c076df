"""Timing one call on an NVIDIA GPU (shared by the cuda and triton backends).

CUDA events around the call, after flushing the L2 cache by writing a buffer twice its size,
so that a kernel never profits from inputs left in L2 by the previous call; a device-wide
synchronize before the end event, so work the call queued on other streams is timed too
(research/verifier.md §4.1: events alone see one stream). Warm-up, fresh inputs
and interleaving with the reference are the latency gate's job; this times exactly one call.
"""

from __future__ import annotations

from typing import Any, Callable

_DEFAULT_L2_BYTES = 64 * 1024 * 1024


def l2_cache_bytes() -> int:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or _DEFAULT_L2_BYTES)


def cuda_event_timer() -> Callable[[Callable[[], Any]], float]:
    """A function that runs fn once on the current CUDA stream and returns milliseconds."""
    import torch

    flush = torch.empty(2 * l2_cache_bytes() // 4, dtype=torch.int32, device="cuda")

    def time_once(fn: Callable[[], Any]) -> float:
        flush.zero_()  # evicts whatever the previous call left in L2
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        torch.cuda.synchronize()  # every stream's work, not only the current stream's
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))

    return time_once


def gpu_present() -> tuple[bool, str]:
    """(True, device name) when torch sees a CUDA GPU, else (False, why not)."""
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if torch.version.cuda is None:
        return False, f"no GPU (torch {torch.__version__} is a CPU-only build)"
    if not torch.cuda.is_available():
        return False, "no GPU (torch.cuda.is_available() is False)"
    return True, torch.cuda.get_device_name(0)
