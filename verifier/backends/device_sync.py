"""Waiting for a device's queued work, by device type (the reference worker's timed calls on a GPU or
an NPU; backends synchronize through their own Backend.synchronize)."""

from __future__ import annotations

from typing import Callable


def synchronizer(device: str) -> Callable[[], None]:
    import torch

    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.synchronize
    if kind == "npu":
        return lambda: torch.npu.synchronize()  # registered by torch_npu
    return lambda: None
