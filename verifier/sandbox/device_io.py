"""Where tensors live inside the sandbox child: the CPU/device boundary of the trials.

Inputs are always generated on the CPU from the secret seed (bit-identical to the reference
worker's, which computes every correctness reference on the CPU), then placed on the backend's
``device()`` for the candidate and for the reference-in-child used for timing. Outputs come back
to the CPU only after ``backend.synchronize()``. On the CPU backend placement is the identity
(``Tensor.to("cpu")`` returns the tensor itself), so the same code runs on every backend.
"""

from __future__ import annotations

import torch


def device_of(backend) -> torch.device:
    """The torch device the backend's candidate runs on (its ``device()`` string)."""
    return torch.device(backend.device())


def place(inputs: list, device: torch.device) -> list:
    """Host inputs as the candidate sees them: tensors on ``device``, everything else as is."""
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def refresh(placed: list, host: list) -> None:
    """Copy changed host inputs into the placed tensors, in place (same storage, new values).
    On the CPU they are the same tensors and the copy is a no-op."""
    for dst, src in zip(placed, host):
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)


def overwrite(fresh: list, planted: list) -> list:
    """``fresh`` (a call's placed inputs) holding ``planted``'s values: tensors copied in place where
    shape, dtype and device agree (same storage, so the call looks like any other), the planted
    value itself elsewhere."""
    out = []
    for dst, src in zip(fresh, planted):
        same = (isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor) and dst.shape == src.shape
                and dst.dtype == src.dtype and dst.device == src.device)
        if same:
            dst.copy_(src)
        out.append(dst if same else src)
    return out


def place_model(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """Parameters and buffers (initialised on the CPU with the init seed) moved to ``device``."""
    return model.to(device)


def on_device(t: torch.Tensor, device: torch.device) -> bool:
    """``t`` lives on ``device`` (its type, and its index when the device names one)."""
    return t.device.type == device.type and (device.index is None or t.device.index == device.index)


def to_host(t: torch.Tensor) -> torch.Tensor:
    """A CPU view/copy of a (synchronized) output for the comparison with the CPU reference."""
    return t.detach().cpu()
