"""Framed messages between the trusted monitor and one sandbox process, over a private socket pair.

A frame is an 8-byte little-endian length, a JSON header, and raw array bytes described by the
header. Nothing is ever unpickled and nothing is parsed from stdout: arrays are rebuilt with
``numpy.frombuffer`` from an allow-list of dtypes. The socket pair is created by the monitor and
inherited by exactly one process, so every frame on it comes from that process (possibly from
candidate code inside it): the receiver treats it as untrusted data, limits its size per read
(``max_bytes``), and rejects anything malformed. There is no nonce: it would be a secret the
candidate's process holds.

File descriptors travel with a frame (``SCM_RIGHTS``) where the monitor hands a peer a shared-memory
region; descriptors a peer sends the monitor are closed on arrival (a hostile process cannot make
the monitor hold them).
"""

from __future__ import annotations

import array
import json
import os
import select
import socket
import struct
import time
from dataclasses import dataclass, field

import numpy as np

MAX_FRAME_BYTES = 1 << 31  # the most a receiver ever allocates for one frame
ALLOWED_DTYPES = ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "uint16", "bool")
_LEN = struct.Struct("<Q")
_MAX_FDS = 4


class ChannelError(Exception):
    """The peer closed the channel, timed out, or sent a malformed frame."""


class ChannelTimeout(ChannelError):
    pass


class ChannelClosed(ChannelError):
    pass


@dataclass
class Frame:
    header: dict
    arrays: list[np.ndarray] = field(default_factory=list)
    fds: list[int] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.header.get("kind", ""))


def _parts(header: dict, arrays: list[np.ndarray]) -> list[memoryview]:
    arrays = [np.asarray(a, order="C") for a in arrays]  # not ascontiguousarray: it makes a 0-d array 1-d
    meta = [{"dtype": str(a.dtype), "shape": list(a.shape)} for a in arrays]
    head = json.dumps({**header, "arrays": meta}).encode()
    parts = [memoryview(_LEN.pack(len(head))), memoryview(head)]
    parts += [memoryview(a.reshape(-1).view(np.uint8)) for a in arrays]
    return [memoryview(_LEN.pack(sum(p.nbytes for p in parts)))] + parts


def encode(header: dict, arrays: list[np.ndarray] = ()) -> bytes:
    return b"".join(bytes(p) for p in _parts(header, list(arrays)))


class Channel:
    """One end of a connected AF_UNIX stream socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @classmethod
    def from_fd(cls, fd: int) -> "Channel":
        return cls(socket.socket(fileno=fd))

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # ---- sending -----------------------------------------------------------------------------
    def send(self, header: dict, arrays: list[np.ndarray] = (), fds: tuple[int, ...] = ()) -> None:
        """Write one frame (``fds`` ride on its first byte); raises OSError if the peer is gone."""
        parts = _parts(header, list(arrays))
        if fds:
            first = bytes(parts[0][:1])
            self.sock.sendmsg([first], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            parts[0] = parts[0][1:]
        for data in parts:
            while data.nbytes:
                sent = self.sock.send(data)
                data = data[sent:]

    # ---- receiving ---------------------------------------------------------------------------
    def receive(self, deadline: float, max_bytes: int = MAX_FRAME_BYTES, keep_fds: bool = False) -> Frame:
        """Read one frame; ChannelError on EOF, timeout, a frame above ``max_bytes`` or bad framing.
        Descriptors that came with it are kept only if ``keep_fds`` (else closed)."""
        fds: list[int] = []
        try:
            (size,) = _LEN.unpack(self._read_exact(_LEN.size, deadline, fds))
            if size > min(max_bytes, MAX_FRAME_BYTES) or size < _LEN.size:
                raise ChannelError(f"frame of {size} bytes refused (at most {max_bytes})")
            body = self._read_exact(size, deadline, fds)
            header, arrays = _decode(body)
        except BaseException:
            _close_all(fds)
            raise
        if not keep_fds:
            _close_all(fds)
            fds = []
        return Frame(header, arrays, fds)

    def _read_exact(self, size: int, deadline: float, fds: list[int]) -> bytearray:
        buffer = bytearray(size)
        view, filled = memoryview(buffer), 0
        anc_size = socket.CMSG_SPACE(_MAX_FDS * 4)
        while filled < size:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise ChannelTimeout("timed out waiting for the sandbox")
            ready, _, _ = select.select([self.sock], [], [], min(timeout, 1.0))
            if not ready:
                continue
            try:
                count, ancdata, _flags, _addr = self.sock.recvmsg_into([view[filled:filled + (1 << 22)]], anc_size)
            except (ConnectionResetError, BrokenPipeError):
                count, ancdata = 0, []
            for level, kind, data in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.extend(array.array("i", data[: len(data) - len(data) % 4]))
            if not count:
                raise ChannelClosed("the sandbox closed its channel")
            filled += count
        return buffer


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _decode(body: bytearray) -> tuple[dict, list[np.ndarray]]:
    (head_len,) = _LEN.unpack(body[: _LEN.size])
    if head_len > len(body) - _LEN.size:
        raise ChannelError("malformed frame header")
    try:
        header = json.loads(body[_LEN.size: _LEN.size + head_len])
    except (ValueError, UnicodeDecodeError):
        raise ChannelError("malformed frame header") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays", []), list):
        raise ChannelError("malformed frame header")
    return header, _decode_arrays(header["arrays"] if "arrays" in header else [], body, _LEN.size + head_len)


def _decode_arrays(metas: list, body: bytearray, offset: int) -> list[np.ndarray]:
    arrays = []
    for meta in metas:
        try:
            dtype, shape = str(meta.get("dtype")), tuple(int(d) for d in meta.get("shape", ()))
        except (AttributeError, TypeError, ValueError):
            raise ChannelError("malformed array description") from None
        if dtype not in ALLOWED_DTYPES or any(d < 0 for d in shape) or len(shape) > 16:
            raise ChannelError(f"array with dtype {dtype!r} refused")
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count * np.dtype(dtype).itemsize
        if offset + nbytes > len(body):
            raise ChannelError("frame shorter than its arrays")
        arrays.append(np.frombuffer(body, dtype=dtype, count=count, offset=offset).reshape(shape))
        offset += nbytes
    return arrays


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """(monitor end, peer end): the peer end is inheritable, for ``pass_fds``."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.set_inheritable(False)
    theirs.set_inheritable(True)
    return ours, theirs


def wait_readable(channels: list[Channel], deadline: float) -> list[Channel]:
    """The channels with data (or EOF) before ``deadline``; [] on timeout."""
    timeout = max(0.0, deadline - time.monotonic())
    ready, _, _ = select.select(channels, [], [], timeout)
    return list(ready)


__all__ = ["Channel", "ChannelClosed", "ChannelError", "ChannelTimeout", "Frame", "encode", "socket_pair",
           "wait_readable", "MAX_FRAME_BYTES", "ALLOWED_DTYPES"]
