"""A timed window's outputs read by the monitor out of the stopped peer's memory, into the peer's arena.

Until 2026-11-30 a peer copied its own outputs into its arena after the clock stopped (Collect), and the
runner's code is the candidate's to replace: an outside set computed a quarter of a ReLU in ``forward`` and
the rest in a replaced output writer (2.9x against the honest 0.98x uncharged; charged by what its Collect
took beyond the reference's, still 1.08-1.29x at load 2, since the copy after the moved work found its
outputs in the cache). Now, in the latency phase's rounds on the CPU, a peer only says where each output
lies in its memory (Collect with ``describe``: address, shape, element strides, dtype: microseconds, timed
and charged like any Collect), is stopped, and the monitor copies the outputs' bytes out of its address space
(``process_vm_readv``: the monitor is the peer's ancestor and the peer stays dumpable, the same access
``verifier.monitor.genuine_code`` reads ``/proc/<pid>/mem`` with) into the output region of the peer's arena,
where the comparison reads them as before. No candidate code runs while its outputs are read.

What the peer says is checked before anything is read: plain layouts of allowed dtypes, every output within
the output region's room, none overlapping another of the window, the window before's (which the peer keeps
alive until this window's Collect: a static output buffer skips the allocation the reference pays) or an arena
mapped in the process (an input); an address the process has not mapped fails the read. Where the monitor cannot read the
process (:func:`readable`), the peers copy their outputs themselves, as before.
"""

from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from verifier.sandbox.arena import Arena, ArenaError, TensorLayout, align

ARENA_NAME = "evokernel-arena"  # the memfd name of every arena (verifier.sandbox.arena.Arena.create)
SPLIT_BYTES = 1 << 20  # a window's outputs larger than this are read on two threads, half each
IOV_MAX = 1024  # pieces one process_vm_readv takes
ADDRESS_LIMIT = 1 << 63

_libc = ctypes.CDLL(None, use_errno=True)
_libc.process_vm_readv.restype = ctypes.c_ssize_t
_helper = ThreadPoolExecutor(1, thread_name_prefix="remote-read")


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class RemoteReadError(Exception):
    """The peer's description of its outputs is out of protocol (``kind`` "malformed"), breaks the outputs'
    contract ("integrity": not fresh tensors), or they could not be read."""

    def __init__(self, reason: str, kind: str = "malformed") -> None:
        super().__init__(reason)
        self.kind = kind


def readable(pid: int) -> bool:
    """Whether this process may read ``pid``'s memory (a few bytes of its first readable mapping)."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                span, perms = line.split()[:2]
                if perms.startswith("r"):
                    start = int(span.split("-")[0], 16)
                    buf = ctypes.create_string_buffer(8)
                    return _read_pieces(pid, ctypes.addressof(buf), [(start, 0, 8)]) == ""
    except (OSError, ValueError):
        return False
    return False


def arena_spans(pid: int) -> list[tuple[int, int]]:
    """The address ranges of the arenas mapped in ``pid`` (inputs live there: no output may)."""
    spans = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and ARENA_NAME in parts[5]:
                start, end = (int(x, 16) for x in parts[0].split("-"))
                spans.append((start, end))
    return spans


@dataclass
class RemoteOutputs:
    """One peer's outputs, window after window: what it described checked, then read into its arena."""

    pid: int
    kept: list[tuple[int, int]] = field(default_factory=list)  # the window before's outputs' address ranges (alive
    # in the peer until its next Collect: no output of the next window may lie there)

    def read(self, described: object, calls: int, arena: Arena, out_start: int) -> list[list[dict]]:
        """The window's outputs copied into ``arena`` from ``out_start`` (the peer is stopped); their arena spec
        per call, as a peer's own Collect reports it. RemoteReadError names what was wrong."""
        per_call = self._layouts(described, calls)
        flat = [lay for lays in per_call for lay in lays]
        spans = [span for lays in per_call for span in _merged([(lay.offset, lay.offset + lay.span()) for lay in lays])]
        self._check_disjoint(spans)
        offset, placed = align(out_start), []
        for lay in flat:
            end = offset + max(lay.span(), 1)
            if end > arena.size:
                raise RemoteReadError("its outputs are larger than the task's outputs allow")
            placed.append(TensorLayout(offset, lay.shape, lay.stride, lay.dtype))
            offset = align(end)
        self._copy(arena, [(remote.offset, local.offset, remote.span()) for remote, local in zip(flat, placed)])
        self.kept = spans
        out, k = [], 0
        for lays in per_call:
            out.append([{"t": "tensor", **lay.to_json()} for lay in placed[k:k + len(lays)]])
            k += len(lays)
        return out

    def _layouts(self, described: object, calls: int) -> list[list[TensorLayout]]:
        if not isinstance(described, list) or len(described) != calls or not all(isinstance(d, list) for d in described):
            raise RemoteReadError(f"outputs must be described as one list per call ({calls})")
        try:
            per_call = []
            for outputs in described:
                if len(outputs) > 64 or not all(isinstance(o, dict) and o.get("t") == "tensor" for o in outputs):
                    raise RemoteReadError("outputs must be a flat list of tensors per call")
                lays = [TensorLayout.from_json(o) for o in outputs]
                for lay in lays:
                    lay.validate(ADDRESS_LIMIT)
                per_call.append(lays)
            return per_call
        except ArenaError as exc:
            raise RemoteReadError(f"an output's layout is out of protocol: {exc}") from None

    def _check_disjoint(self, spans: list[tuple[int, int]]) -> None:
        """Overlaps show between neighbours once sorted (one sort, not every pair: a window of 157 softmax calls
        against the 157 before would be 24,649 pairs a side a round)."""
        if _overlapping(spans):
            raise RemoteReadError("an output reuses the storage of another output of the window (outputs must be "
                                  "fresh tensors on every call)", "integrity")
        if _overlapping(spans + arena_spans(self.pid)):
            raise RemoteReadError("an output lies in the arena its inputs are in (outputs must be fresh tensors)",
                                  "integrity")
        if _overlapping(spans + self.kept):  # each list is disjoint within itself: an overlap is between the two
            raise RemoteReadError("an output reuses the storage of an earlier window's output (outputs must be "
                                  "fresh tensors on every call)", "integrity")

    def _copy(self, arena: Arena, pieces: list[tuple[int, int, int]]) -> None:
        """Copy (remote address, arena offset, bytes) pieces: one system call per IOV_MAX pieces, the bytes split
        between this thread and a helper (a ReLU window's 68 outputs of 2 MiB: ~7 GB/s a thread here)."""
        pieces = [p for p in pieces if p[2] > 0]
        total = sum(p[2] for p in pieces)
        if not total:
            return
        base = ctypes.addressof(ctypes.c_char.from_buffer(arena.map))
        halves: list[list[tuple[int, int, int]]] = [[], []]
        if total < SPLIT_BYTES:
            halves[0] = pieces
        else:
            cut, seen = total // 2, 0
            for remote, local, length in pieces:  # split at the byte half way, inside a piece if need be
                take = min(length, max(0, cut - seen))
                if take:
                    halves[0].append((remote, local, take))
                if length > take:
                    halves[1].append((remote + take, local + take, length - take))
                seen += length
        other = _helper.submit(_read_pieces, self.pid, base, halves[1]) if halves[1] else None
        problems = [_read_pieces(self.pid, base, halves[0])]
        if other is not None:
            problems.append(other.result())
        problem = next((p for p in problems if p), "")
        if problem:
            raise RemoteReadError(f"its outputs could not be read from its memory ({problem}): an address it has "
                                  "not mapped")


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """One call's output ranges, overlapping ones merged: a call may return one tensor twice (as the runner's own
    check allows, verifier.sandbox.serve.CallServer.reuse), two calls may not share storage."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _overlapping(spans: list[tuple[int, int]]) -> bool:
    ordered = sorted(spans)
    return any(a[1] > b[0] for a, b in zip(ordered, ordered[1:]))


def _read_pieces(pid: int, base: int, pieces: list[tuple[int, int, int]]) -> str:
    """"" when every piece was read; else why not."""
    for at in range(0, len(pieces), IOV_MAX):
        chunk = pieces[at:at + IOV_MAX]
        local = (_IoVec * len(chunk))(*[_IoVec(base + off, n) for _, off, n in chunk])
        remote = (_IoVec * len(chunk))(*[_IoVec(addr, n) for addr, _, n in chunk])
        want = sum(n for _, _, n in chunk)
        got = _libc.process_vm_readv(pid, local, len(chunk), remote, len(chunk), 0)
        if got != want:
            return os.strerror(ctypes.get_errno()) if got < 0 else f"{got} of {want} bytes"
    return ""
