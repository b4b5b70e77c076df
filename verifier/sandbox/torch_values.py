"""The sandbox side of verifier.sandbox.values: torch tensors to and from the wire and the arena.

Used by the runner (the candidate's process) and the reference worker; never by the monitor.
Inputs in an arena become tensors that view it (no copy): every call of a verification hands the
candidate tensors at the same addresses with new contents, so nothing keyed on ``data_ptr()``
survives from one call to the next. Outputs are copied into the arena's output region.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from verifier.sandbox import values as wire
from verifier.sandbox.arena import Arena, TensorLayout, align, contiguous_stride

TORCH_DTYPES = {name: getattr(torch, name) for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32",
                                                         "int16", "int8", "uint8", "bool")}


def dtype_name(dtype: torch.dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in TORCH_DTYPES:
        raise TypeError(f"dtype {name} cannot be passed between processes")
    return name


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """Contiguous host copy; bfloat16 as its raw 16 bits."""
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    return t.numpy().copy()


def from_numpy(array: np.ndarray, dtype: str) -> torch.Tensor:
    if dtype == "bfloat16":
        return torch.from_numpy(np.asarray(array, order="C").view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.array(array, copy=True))


def encode_torch(values: list, arrays: list[np.ndarray], depth: int = 0) -> list:
    """``values`` (torch tensors or plain) as JSON; tensors' data appended to ``arrays``."""
    wire._check_depth(depth)
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append({"t": "tensor", "dtype": dtype_name(v.dtype), "i": len(arrays)})
            arrays.append(to_numpy(v))
        else:
            out.append(wire._plain(v, lambda items: encode_torch(items, arrays, depth + 1)))
    return out


def decode_torch(spec: Any, arrays: list[np.ndarray]) -> list:
    """The values of ``spec`` with tensors as fresh torch tensors."""
    return _to_torch(wire.decode_host(spec, arrays))


def _to_torch(values: list) -> list:
    out = []
    for v in values:
        if isinstance(v, wire.HostTensor):
            out.append(from_numpy(v.array, v.dtype))
        elif isinstance(v, list):
            out.append(_to_torch(v))
        elif isinstance(v, tuple):
            out.append(tuple(_to_torch(list(v))))
        else:
            out.append(v)
    return out


def arena_values(spec: Any, arena: Arena, depth: int = 0) -> list:
    """A call's inputs: tensors viewing the arena (validated layouts), scalars as they are."""
    wire._check_depth(depth)
    if not isinstance(spec, list) or len(spec) > wire.MAX_ITEMS:
        raise ValueError("a value list was expected")
    base = torch.frombuffer(arena.map, dtype=torch.uint8)
    out = []
    for item in spec:
        if isinstance(item, dict) and item.get("t") == "tensor":
            layout = TensorLayout.from_json(item)
            layout.validate(arena.size)
            out.append(_view(base, layout))
        else:
            out.append(wire._unplain(item, lambda inner: arena_values(inner, arena, depth + 1)))
    return out


def _view(base: torch.Tensor, layout: TensorLayout) -> torch.Tensor:
    dtype = TORCH_DTYPES[layout.dtype]
    count = max(layout.span() // layout.itemsize, 1)
    flat = base[layout.offset: layout.offset + count * layout.itemsize].view(dtype)
    return flat.as_strided(layout.shape, layout.stride)


def write_outputs(outputs: list, arena: Arena, start: int) -> list:
    """Copy each output tensor into the arena from ``start`` (contiguous); their layouts as a spec.
    Anything but plain tensors, or more than fits, raises (the monitor reports it)."""
    base = torch.frombuffer(arena.map, dtype=torch.uint8)
    offset, spec = align(start), []
    for i, out in enumerate(outputs):
        if type(out) is not torch.Tensor:
            raise TypeError(f"output {i} is a {type(out).__name__}, not a plain torch.Tensor")
        shape = tuple(out.shape)
        layout = TensorLayout(offset, shape, contiguous_stride(shape), dtype_name(out.dtype))
        if offset + layout.span() > arena.size:
            raise ValueError(f"output {i} ({out.numel()} elements of {layout.dtype}) is larger than the task's "
                             "outputs allow")
        _view(base, layout).copy_(out)
        spec.append({"t": "tensor", **layout.to_json()})
        offset = align(offset + max(layout.span(), 1))
    return spec
