"""Framed messages between the trusted parent and a sandboxed child over dedicated pipes.

A frame is an 8-byte little-endian length, a JSON header, and raw array bytes described by the
header. The parent never unpickles anything from a child: arrays are rebuilt with
``numpy.frombuffer`` from an allow-list of dtypes, and every header carries the per-run nonce.
Nothing is ever parsed from stdout.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from dataclasses import dataclass, field

import numpy as np

MAX_FRAME_BYTES = 1 << 31  # a hostile child cannot make the parent allocate more than this
ALLOWED_DTYPES = ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")
_LEN = struct.Struct("<Q")


class ChannelError(Exception):
    """The peer closed the channel, timed out, or sent a malformed/forged frame."""


class ChannelTimeout(ChannelError):
    pass


class ChannelClosed(ChannelError):
    pass


@dataclass
class Message:
    header: dict
    arrays: list[np.ndarray] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.header.get("kind", ""))


def _frame_parts(header: dict, arrays: list[np.ndarray]) -> list[memoryview]:
    """The frame as views: length, header length, header, then each array's bytes (not copied)."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    meta = [{"dtype": str(a.dtype), "shape": list(a.shape)} for a in arrays]
    head = json.dumps({**header, "arrays": meta}).encode()
    parts = [memoryview(_LEN.pack(len(head))), memoryview(head)]
    parts += [memoryview(a.reshape(-1).view(np.uint8)) for a in arrays]
    return [memoryview(_LEN.pack(sum(p.nbytes for p in parts)))] + parts


def encode(header: dict, arrays: list[np.ndarray] = ()) -> bytes:
    return b"".join(bytes(p) for p in _frame_parts(header, list(arrays)))


def write_message(fd: int, header: dict, arrays: list[np.ndarray] = ()) -> None:
    """One frame, written part by part: outputs of hundreds of MB are not joined into one copy first."""
    for data in _frame_parts(header, list(arrays)):
        while data:
            written = os.write(fd, data)
            data = data[written:]


def _read_exact(fd: int, size: int, deadline: float) -> bytearray:
    """Exactly ``size`` bytes, read straight into one buffer (no list of chunks joined afterwards)."""
    buffer = bytearray(size)
    view, filled = memoryview(buffer), 0
    while filled < size:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise ChannelTimeout("timed out waiting for the sandbox")
        ready, _, _ = select.select([fd], [], [], min(timeout, 1.0))
        if not ready:
            continue
        count = os.readv(fd, [view[filled:filled + (1 << 22)]])
        if not count:
            raise ChannelClosed("the sandbox closed its result channel")
        filled += count
    return buffer


def read_message(fd: int, deadline: float, nonce: str | None) -> Message:
    """Read one frame; raise ChannelError on EOF, timeout, bad framing or a wrong nonce.

    ``nonce=None`` (child side, reading the parent's configuration) skips the nonce check."""
    (size,) = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    if size > MAX_FRAME_BYTES or size < _LEN.size:
        raise ChannelError(f"frame of {size} bytes refused")
    body = _read_exact(fd, size, deadline)
    (head_len,) = _LEN.unpack(body[: _LEN.size])
    try:
        header = json.loads(body[_LEN.size : _LEN.size + head_len])
    except (ValueError, UnicodeDecodeError):
        raise ChannelError("malformed frame header") from None
    if not isinstance(header, dict) or (nonce is not None and header.get("nonce") != nonce):
        raise ChannelError("frame without the run's nonce (forged or corrupted result)")
    return Message(header, _decode_arrays(header, body, _LEN.size + head_len))


def _decode_arrays(header: dict, body: bytes, offset: int) -> list[np.ndarray]:
    arrays = []
    for meta in header.get("arrays", []):
        dtype, shape = str(meta.get("dtype")), tuple(int(d) for d in meta.get("shape", ()))
        if dtype not in ALLOWED_DTYPES or any(d < 0 for d in shape):
            raise ChannelError(f"array with dtype {dtype!r} refused")
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count * np.dtype(dtype).itemsize
        if offset + nbytes > len(body):
            raise ChannelError("frame shorter than its arrays")
        arrays.append(np.frombuffer(body, dtype=dtype, count=count, offset=offset).reshape(shape))
        offset += nbytes
    return arrays
