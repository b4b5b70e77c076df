"""Shared memory between the monitor and one sandbox process: where a call's inputs and outputs live.

The monitor creates an anonymous memory file (``memfd``), sizes it, seals its size (a peer can
neither shrink it under the monitor's mapping, which would fault the monitor, nor grow it) and
hands the descriptor to the peer with a frame (verifier.sandbox.channel). Both map it. The monitor
writes each call's inputs into the peer's arena right before the call; the peer builds tensors on
them without a copy and writes its outputs into the output region before it answers. Nothing the
peer wrote is trusted: the monitor validates every layout the peer reports against the arena's
bounds and copies what it reads out at once.

Layouts are 64-byte aligned (what torch's CPU allocator gives, so vectorised kernels see the
alignment they would see on freshly allocated tensors), and a tensor of :data:`MAPPED_FROM` bytes or more
lies where a user's process would have it: 64 bytes into a page (:func:`place`). torch takes such a tensor
with ``posix_memalign(64)``, and where the heap has no room for it (the inputs a script draws at its start)
glibc maps it afresh (its default mmap threshold is 128 KiB), handing back the first 64-byte boundary past
the chunk's header: the input a user draws and a large output a kernel allocates both start 64 bytes into a
page. An input starting on the page boundary instead puts every
load 64 bytes behind the store to the same offset in a page (4K aliasing: the core takes the load for
one that depends on the store): the ReLU kernel of the known-good solutions took 8.51-8.74 ms a call on a
page-aligned 32 MiB input against 8.02-8.28 ms on one 64 bytes in, with torch's own output, the inputs taking
turns call by call (``benchmarks.input_alignment``, 2026-11-30); verified, the known-good ReLU read 0.87-0.90x
with page-aligned inputs, 0.98-1.01x with them 64 bytes in.
"""

from __future__ import annotations

import fcntl
import functools
import mmap
import os
from dataclasses import dataclass

import numpy as np

ALIGN = 64
PAGE = mmap.PAGESIZE
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
# numpy has no bfloat16: it travels as its raw 16 bits and is widened to float32 (exactly) when read
RAW_DTYPES = {"bfloat16": "uint16"}
DTYPE_SIZES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
               "int8": 1, "uint8": 1, "bool": 1}

_NUMPY_DTYPES = {name: np.dtype(RAW_DTYPES.get(name, name)) for name in DTYPE_SIZES}


class ArenaError(ValueError):
    """A layout that does not fit the arena (from a peer: a malformed report)."""


MAPPED_FROM = 128 << 10  # glibc's default mmap threshold: larger blocks are mapped (a page of their own)


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def place(offset: int, nbytes: int) -> int:
    """Where a tensor of ``nbytes`` goes at or after ``offset``: 64-byte aligned, and 64 bytes into a page
    (the first such offset) from :data:`MAPPED_FROM` bytes on, as torch's allocator hands out a mapped block."""
    if nbytes < MAPPED_FROM:
        return align(offset)
    return (offset - ALIGN + PAGE - 1) // PAGE * PAGE + ALIGN


def page_round(n: int) -> int:
    return (n + PAGE - 1) // PAGE * PAGE


@dataclass(frozen=True)
class TensorLayout:
    """Where one tensor lives in an arena: byte offset, shape, element strides, dtype name."""

    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str

    @property
    def itemsize(self) -> int:
        return DTYPE_SIZES[self.dtype]

    def span(self) -> int:
        """Bytes from ``offset`` that the tensor's elements can reach."""
        return _span(self.shape, self.stride, self.dtype)

    def validate(self, size: int) -> None:
        span = _checked_span(self.shape, self.stride, self.dtype)
        if self.offset < 0:
            raise ArenaError("negative shape, stride or offset")
        if self.offset % DTYPE_SIZES[self.dtype] or self.offset + span > size:
            raise ArenaError(f"tensor at {self.offset} (+{span} bytes) outside the arena of {size} bytes")

    def to_json(self) -> dict:
        return {"offset": self.offset, "shape": list(self.shape), "stride": list(self.stride), "dtype": self.dtype}

    @classmethod
    def from_json(cls, data: dict) -> "TensorLayout":
        try:
            return cls(int(data["offset"]), tuple(int(d) for d in data["shape"]),
                       tuple(int(s) for s in data["stride"]), str(data["dtype"]))
        except (KeyError, TypeError, ValueError):
            raise ArenaError("malformed tensor layout") from None


# A window's calls repeat a handful of shapes: what depends on the shape alone is worked out once per shape
# (a window of 256 tiny ReLU calls validated ~25,000 layouts a verification, a tenth of its monitor's time).
@functools.lru_cache(maxsize=4096)
def _span(shape: tuple[int, ...], stride: tuple[int, ...], dtype: str) -> int:
    if any(d == 0 for d in shape):
        return 0
    return (1 + sum((d - 1) * s for d, s in zip(shape, stride))) * DTYPE_SIZES[dtype]


@functools.lru_cache(maxsize=4096)
def _checked_span(shape: tuple[int, ...], stride: tuple[int, ...], dtype: str) -> int:
    """The span of a layout whose dtype, shape and stride are allowed; ArenaError otherwise (not cached)."""
    if dtype not in DTYPE_SIZES:
        raise ArenaError(f"dtype {dtype!r} not allowed")
    if len(shape) != len(stride) or len(shape) > 16:
        raise ArenaError("shape and stride differ in length")
    if any(d < 0 for d in shape) or any(s < 0 for s in stride):
        raise ArenaError("negative shape, stride or offset")
    return _span(shape, stride, dtype)


def contiguous_stride(shape: tuple[int, ...]) -> tuple[int, ...]:
    stride, step = [], 1
    for d in reversed(shape):
        stride.append(step)
        step *= max(d, 1)
    return tuple(reversed(stride))


class Arena:
    """A mapped memory file. The monitor creates it (:meth:`create`), a peer attaches (:meth:`attach`)."""

    def __init__(self, fd: int, size: int, owner: bool) -> None:
        self.fd, self.size, self.owner = fd, size, owner
        self.map = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) if size else None

    @classmethod
    def create(cls, size: int, name: str = "evokernel-arena") -> "Arena":
        size = max(PAGE, (size + PAGE - 1) // PAGE * PAGE)
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
        return cls(fd, size, owner=True)

    @classmethod
    def attach(cls, fd: int) -> "Arena":
        size = os.fstat(fd).st_size
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        if seals & SEALS != SEALS:
            raise ArenaError("the arena is not sealed")
        return cls(fd, size, owner=False)

    def close(self) -> None:
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:  # a view is still alive (peer side): the mapping goes with the process
                pass
            self.map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    # ---- monitor side (numpy) --------------------------------------------------------------------
    def write(self, layout: TensorLayout, values: np.ndarray) -> None:
        """Write ``values`` (numpy, already in the layout's dtype or its raw form) at ``layout``."""
        layout.validate(self.size)
        target = self.view(layout)
        target[...] = values.view(target.dtype) if values.dtype != target.dtype else values

    def view(self, layout: TensorLayout) -> np.ndarray:
        """A numpy view of ``layout`` (bfloat16 as its raw uint16)."""
        layout.validate(self.size)
        dtype = _NUMPY_DTYPES[layout.dtype]
        strides = tuple(s * dtype.itemsize for s in layout.stride)
        return np.ndarray(layout.shape, dtype, buffer=self.map, offset=layout.offset, strides=strides)

    def borrow(self, layout: TensorLayout) -> np.ndarray:
        """A read-only view of ``layout`` (bfloat16 widened to float32, a copy): valid while the peer is
        stopped and the arena mapped; the caller drops it before either changes."""
        if layout.dtype == "bfloat16":
            return self.read(layout)
        view = self.view(layout)
        view.flags.writeable = False
        return view

    def read(self, layout: TensorLayout) -> np.ndarray:
        """A private, contiguous copy of ``layout`` (bfloat16 widened to float32)."""
        raw = np.array(self.view(layout), copy=True, order="C")
        if layout.dtype == "bfloat16":
            return (raw.astype(np.uint32) << 16).view(np.float32)
        return raw


def plan(shapes: list[tuple[tuple[int, ...], str]], start: int = 0) -> tuple[list[TensorLayout], int]:
    """Contiguous layouts for (shape, dtype) one after another from ``start``; (layouts, end)."""
    layouts, offset = [], align(start)
    for shape, dtype in shapes:
        layout = TensorLayout(offset, tuple(shape), contiguous_stride(tuple(shape)), dtype)
        layouts.append(layout)
        offset = align(offset + max(layout.span(), 1))
    return layouts, offset
