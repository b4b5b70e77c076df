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


def encode(header: dict, arrays: list[np.ndarray] = ()) -> bytes:
    arrays = [np.ascontiguousarray(a) for a in arrays]
    meta = [{"dtype": str(a.dtype), "shape": list(a.shape)} for a in arrays]
    head = json.dumps({**header, "arrays": meta}).encode()
    body = b"".join([_LEN.pack(len(head)), head] + [a.tobytes() for a in arrays])
    return _LEN.pack(len(body)) + body


def write_message(fd: int, header: dict, arrays: list[np.ndarray] = ()) -> None:
    data = memoryview(encode(header, arrays))
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exact(fd: int, size: int, deadline: float) -> bytes:
    chunks, remaining = [], size
    while remaining:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise ChannelTimeout("timed out waiting for the sandbox")
        ready, _, _ = select.select([fd], [], [], min(timeout, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, min(remaining, 1 << 22))
        if not chunk:
            raise ChannelClosed("the sandbox closed its result channel")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


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
