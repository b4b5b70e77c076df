"""The kernel's software CPU-clock sampler, opened by the monitor on another process's threads.

``perf_event_open`` with PERF_COUNT_SW_CPU_CLOCK (no hardware PMU needed: it runs on a timer of the
task's own CPU time) samples the instruction pointer, the thread and the time (CLOCK_MONOTONIC, the
monitor's own clock) of the watched threads every ``period_ns`` of their CPU time, into a ring buffer
the kernel writes and only the monitor maps. Nothing in the watched process can read or rewrite it:
its seccomp filter refuses ``perf_event_open``, ``bpf`` and ``ptrace``, and ``prctl``'s
PR_TASK_PERF_EVENTS_DISABLE (verifier.sandbox.seccomp).

The kernel refuses to map the ring of an inherited per-task event that follows the task on every CPU,
so :class:`Rings` opens one event per (thread, CPU the process may run on), each inherited by the
threads that thread creates later (``inherit`` with ``inherit_thread``: their samples land in the
creator's ring), with ``task`` records: a thread's creation and exit are in the stream too, whether or
not it ever ran long enough to be sampled. Opened while every thread is stopped, so no thread escapes.

A thread in the monitor drains a ring when the kernel wakes it at half full; what is left is drained
when the caller asks (:meth:`Rings.drain`). Records come back parsed (:class:`Records`).
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import select
import struct
import threading
from dataclasses import dataclass, field

import numpy as np

SYS_PERF_EVENT_OPEN = 298  # x86_64
PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK = 1, 0
SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME = 1, 2, 4
DISABLED, INHERIT, TASK, WATERMARK, USE_CLOCKID, INHERIT_THREAD = 1, 1 << 1, 1 << 13, 1 << 14, 1 << 25, 1 << 35
FLAG_FD_CLOEXEC = 8
CLOCK_MONOTONIC = 1
IOC_ENABLE, IOC_DISABLE, IOC_PERIOD = 0x2400, 0x2401, 0x40082404  # _IO('$', 0), _IO('$', 1), _IOW('$', 4, __u64)
ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7
RECORD_LOST, RECORD_EXIT, RECORD_FORK, RECORD_SAMPLE = 2, 4, 7, 9
CPUMODE_MASK, CPUMODE_KERNEL = 7, 1
PAGE = mmap.PAGESIZE
RING_PAGES = 128  # 512 KiB: 16k samples per (thread, CPU) before the drain thread must have run
_HEAD = struct.Struct("<IHH")
_TASK = struct.Struct("<IIIIQ")  # pid, ppid, tid, ptid, time
_LOST = struct.Struct("<QQ")  # id, lost


class PerfUnavailable(OSError):
    """The kernel would not open the sampler (no perf events, or not allowed)."""


def attr(period_ns: int, ring_bytes: int) -> bytes:
    """perf_event_attr: cpu-clock every ``period_ns`` of CPU time; IP, TID and TIME per sample; inherited
    by new threads; task records; the monitor's CLOCK_MONOTONIC; a wake-up at half the ring; off until
    enabled (:meth:`Rings.enable`)."""
    raw = bytearray(ATTR_SIZE)
    struct.pack_into("<IIQQQQQI", raw, 0, PERF_TYPE_SOFTWARE, ATTR_SIZE, PERF_COUNT_SW_CPU_CLOCK, period_ns,
                     SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME, 0,
                     DISABLED | INHERIT | INHERIT_THREAD | TASK | WATERMARK | USE_CLOCKID,
                     ring_bytes // 2)
    struct.pack_into("<i", raw, 92, CLOCK_MONOTONIC)
    return bytes(raw)


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long


def open_event(tid: int, cpu: int, period_ns: int, ring_bytes: int) -> int:
    buf = ctypes.create_string_buffer(attr(period_ns, ring_bytes), ATTR_SIZE)
    fd = _LIBC.syscall(ctypes.c_long(SYS_PERF_EVENT_OPEN), buf, ctypes.c_int(tid), ctypes.c_int(cpu),
                       ctypes.c_int(-1), ctypes.c_ulong(FLAG_FD_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise PerfUnavailable(err, f"perf_event_open(cpu-clock, thread {tid}, cpu {cpu}): {os.strerror(err)}")
    return int(fd)


_SAMPLE_RECORD = np.dtype([("type", "<u4"), ("misc", "<u2"), ("size", "<u2"), ("ip", "<u8"), ("pid", "<u4"),
                           ("tid", "<u4"), ("time", "<u8")])


@dataclass
class Records:
    """Parsed records of one drain: samples as arrays (``ips``, ``tids``, ``times``, ``kernel``) once
    :meth:`arrays` is called, thread creations and exits, lost samples."""

    chunks: list[np.ndarray] = field(default_factory=list)  # sample records, _SAMPLE_RECORD
    forks: list[tuple[int, int]] = field(default_factory=list)  # (time, tid) of a thread created
    exits: list[tuple[int, int]] = field(default_factory=list)  # (time, tid) of a thread that ended
    lost: int = 0

    def samples(self) -> np.ndarray:
        return np.concatenate(self.chunks) if self.chunks else np.zeros(0, _SAMPLE_RECORD)


def parse(data: bytes, into: Records) -> None:
    """Append the records of one ring's bytes (whole records, oldest first) to ``into``: samples only (the
    usual case) are read as one array; a mixed stream record by record."""
    if len(data) % _SAMPLE_RECORD.itemsize == 0:
        records = np.frombuffer(data, _SAMPLE_RECORD)
        if np.all(records["type"] == RECORD_SAMPLE) and np.all(records["size"] == _SAMPLE_RECORD.itemsize):
            into.chunks.append(records)
            return
    samples: list[bytes] = []
    pos, end = 0, len(data)
    while pos + 8 <= end:
        kind, _misc, size = _HEAD.unpack_from(data, pos)
        if size < 8:
            break
        if kind == RECORD_SAMPLE and size == _SAMPLE_RECORD.itemsize:
            samples.append(data[pos: pos + size])
        elif kind in (RECORD_FORK, RECORD_EXIT):
            pid, _ppid, tid, _ptid, time = _TASK.unpack_from(data, pos + 8)
            if pid != tid or kind == RECORD_EXIT:  # a thread of the process (a fork record of a process is refused by seccomp)
                (into.forks if kind == RECORD_FORK else into.exits).append((time, tid))
        elif kind == RECORD_LOST:
            into.lost += _LOST.unpack_from(data, pos + 8)[1]
        pos += size
    if samples:
        into.chunks.append(np.frombuffer(b"".join(samples), _SAMPLE_RECORD))


class Ring:
    """One event's ring buffer, mapped by the monitor."""

    def __init__(self, fd: int, pages: int) -> None:
        self.fd = fd
        self.map = mmap.mmap(fd, (pages + 1) * PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.offset, self.size = struct.unpack_from("<QQ", self.map, 1040)  # data_offset, data_size

    def take(self) -> bytes:
        """The records written since the last take (the ring's tail moved past them)."""
        head, tail = struct.unpack_from("<QQ", self.map, 1024)
        if head == tail:
            return b""
        start, length = tail % self.size, head - tail
        first = min(length, self.size - start)
        data = self.map[self.offset + start: self.offset + start + first]
        if first < length:
            data += self.map[self.offset: self.offset + length - first]
        struct.pack_into("<Q", self.map, 1032, head)  # data_tail: the kernel may write over it now
        return data

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)


class Rings:
    """Every ring of one watched process, and the thread that drains them at half full."""

    def __init__(self, rings: list[Ring]) -> None:
        self.rings = rings
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._drain_loop, name="evokernel-cpu-sampler", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, tids: list[int], cpus: list[int], period_ns: int, pages: int = RING_PAGES) -> "Rings":
        rings: list[Ring] = []
        try:
            for tid in tids:
                for cpu in cpus:
                    fd = open_event(tid, cpu, period_ns, pages * PAGE)
                    try:
                        rings.append(Ring(fd, pages))
                    except OSError:
                        os.close(fd)
                        raise
        except OSError:
            for ring in rings:
                ring.close()
            raise
        return cls(rings)

    def _take_all(self) -> None:
        with self._lock:
            for ring in self.rings:
                data = ring.take()
                if data:
                    self._pending.append(data)

    def _drain_loop(self) -> None:
        poller = select.poll()
        for ring in self.rings:
            poller.register(ring.fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while True:
            events = poller.poll()
            if any(fd == self._wake_r for fd, _ in events):
                return
            for fd, flags in events:
                if flags & (select.POLLHUP | select.POLLERR):
                    poller.unregister(fd)  # the thread ended: its ring is drained with the others
            self._take_all()

    def drain(self) -> Records:
        """Everything written so far, parsed."""
        self._take_all()
        with self._lock:
            pending, self._pending = self._pending, []
        records = Records()
        for chunk in pending:
            parse(chunk, records)
        return records

    def enable(self, on: bool) -> None:
        """Sample (and record thread creations and exits) from now on, or stop: the events of every thread,
        those inherited by threads created since included (the kernel applies it to an event's children)."""
        for ring in self.rings:
            fcntl.ioctl(ring.fd, IOC_ENABLE if on else IOC_DISABLE, 0)

    def set_period(self, period_ns: int) -> None:
        value = struct.pack("<Q", period_ns)
        for ring in self.rings:
            fcntl.ioctl(ring.fd, IOC_PERIOD, value)

    def close(self) -> None:
        os.write(self._wake_w, b"x")
        self._thread.join(timeout=5.0)
        for ring in self.rings:
            ring.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
