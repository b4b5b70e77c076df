"""Argument lists (``get_init_inputs()``, ``get_inputs()``, a model's outputs) as data on the wire.

A value is one of: a tensor, an int, a float, a bool, None, a string, or a list/tuple of values.
On the wire it is JSON plus arrays (verifier.sandbox.channel), or JSON plus tensor layouts in an
arena (verifier.sandbox.arena) for a call's inputs and outputs. The monitor side sees tensors as
:class:`HostTensor` (a numpy array with its dtype name; bfloat16 as raw uint16) and never imports
torch; the sandbox side builds torch tensors (:func:`to_torch`, :func:`from_torch`).

Decoding is strict (``ValueError`` on anything else), since a peer may be hostile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from verifier.sandbox.arena import DTYPE_SIZES, RAW_DTYPES, TensorLayout, align, contiguous_stride, place

MAX_DEPTH = 8
MAX_ITEMS = 4096
MAX_TEXT = 1 << 16


@dataclass(frozen=True)
class HostTensor:
    """A tensor on the monitor's side: numpy data (raw uint16 for bfloat16), dtype name, strides."""

    array: np.ndarray
    dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def nbytes(self) -> int:
        return int(self.array.size) * DTYPE_SIZES[self.dtype]


@dataclass(frozen=True)
class Shaped:
    """A tensor as the arena's layout planner sees it (shape and dtype name); ``payload`` is what the
    caller writes there (a torch tensor on the sandbox side)."""

    shape: tuple[int, ...]
    dtype: str
    payload: Any = None


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError("values nested too deeply")


# ---- JSON + arrays (channel frames) ---------------------------------------------------------------
def encode_host(values: list, arrays: list[np.ndarray], depth: int = 0) -> list:
    """Monitor side: ``values`` (HostTensor or plain) as JSON; tensors appended to ``arrays``."""
    _check_depth(depth)
    out = []
    for v in values:
        if isinstance(v, HostTensor):
            out.append({"t": "tensor", "dtype": v.dtype, "i": len(arrays)})
            arrays.append(np.asarray(v.array, order="C"))
        else:
            out.append(_plain(v, lambda items: encode_host(items, arrays, depth + 1)))
    return out


def decode_host(spec: Any, arrays: list[np.ndarray], depth: int = 0) -> list:
    """Monitor side: the inverse of :func:`encode_host` (and of :func:`encode_torch`)."""
    _check_depth(depth)
    if not isinstance(spec, list) or len(spec) > MAX_ITEMS:
        raise ValueError("a value list was expected")
    out = []
    for item in spec:
        if isinstance(item, dict) and item.get("t") == "tensor":
            index, dtype = int(item["i"]), str(item["dtype"])
            if dtype not in DTYPE_SIZES or not 0 <= index < len(arrays):
                raise ValueError("bad tensor reference")
            array = arrays[index]
            if str(array.dtype) != RAW_DTYPES.get(dtype, dtype):
                raise ValueError(f"tensor data of dtype {array.dtype} tagged {dtype}")
            out.append(HostTensor(array, dtype))
        else:
            out.append(_unplain(item, lambda items: decode_host(items, arrays, depth + 1)))
    return out


def _plain(v: Any, seq) -> dict:
    if v is None:
        return {"t": "none"}
    if isinstance(v, bool):
        return {"t": "bool", "v": v}
    if isinstance(v, int):
        return {"t": "int", "v": v}
    if isinstance(v, float):
        return {"t": "float", "v": v}
    if isinstance(v, str):
        return {"t": "str", "v": v[:MAX_TEXT]}
    if isinstance(v, (list, tuple)):
        return {"t": "seq", "tuple": isinstance(v, tuple), "items": seq(list(v))}
    raise TypeError(f"a {type(v).__name__} cannot be passed between processes")


def _unplain(item: Any, seq) -> Any:
    if not isinstance(item, dict):
        raise ValueError("malformed value")
    kind = item.get("t")
    if kind == "none":
        return None
    if kind == "bool" and isinstance(item.get("v"), bool):
        return item["v"]
    if kind == "int" and isinstance(item.get("v"), int) and not isinstance(item.get("v"), bool):
        return item["v"]
    if kind == "float" and isinstance(item.get("v"), (int, float)) and not isinstance(item.get("v"), bool):
        return float(item["v"])
    if kind == "str" and isinstance(item.get("v"), str) and len(item["v"]) <= MAX_TEXT:
        return item["v"]
    if kind == "seq":
        items = seq(item.get("items"))
        return tuple(items) if item.get("tuple") else items
    raise ValueError(f"malformed value of kind {kind!r}")


# ---- arena layouts (a call's inputs and outputs) -----------------------------------------------------
def layout_spec(values: list, start: int = 0) -> tuple[list, list[tuple[TensorLayout, Any]], int]:
    """(spec, [(layout, tensor)], end) placing each tensor of ``values`` (HostTensor or Shaped) in an
    arena from ``start``, contiguous; scalars stay in the spec."""
    placer = _Placer(align(start))
    spec = placer.walk(list(values), 0)
    return spec, placer.placed, placer.offset


def next_place(offset: int, span: int) -> tuple[int, int]:
    """(where a contiguous tensor of ``span`` bytes goes at or after ``offset``, where the next one may start):
    the place :func:`layout_spec` gives each tensor in turn (verifier.sandbox.drawing.ArenaSlots fills there)."""
    at = place(offset, span)
    return at, align(at + max(span, 1))


class _Placer:
    """The walk of :func:`layout_spec`. A class, not a closure: a nested function that calls itself is a
    reference cycle (the function and its own cell), and it would keep ``placed`` (a round's drawn input
    sets, tens of MB each) alive until the cyclic collector ran, growing the heap the timed outputs come
    from by a round's inputs at a time (docs/timing.md, "A/A")."""

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.placed: list[tuple[TensorLayout, Any]] = []

    def walk(self, items: list, depth: int) -> list:
        _check_depth(depth)
        out = []
        for v in items:
            if isinstance(v, (HostTensor, Shaped)):
                layout = TensorLayout(0, tuple(v.shape), contiguous_stride(tuple(v.shape)), v.dtype)
                at, self.offset = next_place(self.offset, layout.span())
                layout = replace(layout, offset=at)
                self.placed.append((layout, v))
                out.append({"t": "tensor", **layout.to_json()})
            else:
                out.append(_plain(v, lambda inner: self.walk(inner, depth + 1)))
        return out


def layouts_in(spec: Any, size: int, depth: int = 0) -> list[TensorLayout]:
    """Every tensor layout of an arena spec, validated against an arena of ``size`` bytes."""
    _check_depth(depth)
    if not isinstance(spec, list) or len(spec) > MAX_ITEMS:
        raise ValueError("a value list was expected")
    found = []
    for item in spec:
        if isinstance(item, dict) and item.get("t") == "tensor":
            layout = TensorLayout.from_json(item)
            layout.validate(size)
            found.append(layout)
        elif isinstance(item, dict) and item.get("t") == "seq":
            found += layouts_in(item.get("items"), size, depth + 1)
        else:
            _unplain(item, lambda inner: [])
    return found


def storage_bytes(values: list) -> int:
    """Arena bytes that :func:`layout_spec` needs for ``values``."""
    return layout_spec(values)[2]
