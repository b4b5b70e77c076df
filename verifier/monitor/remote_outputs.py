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

What is read (:class:`Reads`): every byte of the calls checked in full (verifier.monitor.output_checks.CheckPlan);
of every other call's outputs, :data:`RUNS` runs of :data:`RUN` consecutive elements at places the monitor drew
for the round (the same elements of every side), which is what the comparison of such a call reads (a sample of
its elements). A ReLU window's 68 outputs of 1.5 MiB took 17 ms a side to copy whole; their runs, 68 x 16 KiB.
An output that is not row-major, or not larger than its runs, is read whole.
"""

from __future__ import annotations

import ctypes
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from verifier.sandbox.arena import Arena, ArenaError, TensorLayout, align

ARENA_NAME = "evokernel-arena"  # the memfd name of every arena (verifier.sandbox.arena.Arena.create)
SPLIT_BYTES = 1 << 20  # a window's outputs larger than this are read on two threads, half each
IOV_MAX = 1024  # pieces one process_vm_readv takes
ADDRESS_LIMIT = 1 << 63
RUNS = 16  # runs read of each output of a call not checked in full ...
RUN = 256  # ... of this many consecutive elements each (16 x 256: output_checks.SAMPLE elements)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.process_vm_readv.restype = ctypes.c_ssize_t
_helper = ThreadPoolExecutor(1, thread_name_prefix="remote-read")


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
                    return _read_pieces(pid, ctypes.addressof(buf), *_pieces([(start, 0, 8)])) == ""
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


@dataclass(frozen=True)
class Reads:
    """What the monitor reads of one round's windows, the same for every side: the calls in ``whole`` whole; of
    every other call ``c``'s outputs the runs that ``at[c]`` (RUNS fractions in [0, 1)) place along each."""

    whole: frozenset[int]
    at: np.ndarray  # (calls, RUNS)

    @classmethod
    def drawn(cls, calls: int, whole: frozenset[int], rng: np.random.Generator) -> "Reads":
        return cls(whole, rng.random((calls, RUNS)))

    def starts(self, call: int, layout: TensorLayout) -> np.ndarray | None:
        """The first element (row-major, flat) of each run read of ``layout``, an output of ``call``; None: whole."""
        numel, row_major = _numel_row_major(layout.shape, layout.stride)
        if call in self.whole or call >= len(self.at) or numel <= RUNS * RUN or not row_major:
            return None
        return (self.at[call] * (numel - RUN + 1)).astype(np.int64)


@dataclass(frozen=True)
class Sampled:
    """An output read as runs: its own shape, and the first element of each run (what its placed elements are)."""

    shape: tuple[int, ...]
    starts: tuple[int, ...]

    @classmethod
    def of(cls, item: dict) -> "Sampled | None":
        """The ``sampled`` entry of an output's spec, as :meth:`RemoteOutputs.read` wrote it (None: read whole)."""
        found = item.get("sampled")
        return None if found is None else cls(tuple(found["shape"]), tuple(found["starts"]))

    def indices(self) -> np.ndarray:
        return sampled_indices(self.starts)


def sampled_indices(starts: tuple[int, ...]) -> np.ndarray:
    """The flat element indices the runs starting at ``starts`` cover, in the order they were read."""
    return (np.asarray(starts, np.int64)[:, None] + np.arange(RUN, dtype=np.int64)[None, :]).reshape(-1)


@functools.lru_cache(maxsize=4096)
def _numel_row_major(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, bool]:
    """(elements, whether row-major) of a shape and its strides: worked out once per shape (a window repeats them)."""
    numel, step, row_major = 1, 1, True
    for size, stride in zip(reversed(shape), reversed(strides)):
        numel *= size
        if size > 1 and stride != step:
            row_major = False
        step *= max(size, 1)
    return numel, row_major


@dataclass
class RemoteOutputs:
    """One peer's outputs, window after window: what it described checked, then read into its arena."""

    pid: int
    kept: list[tuple[int, int]] = field(default_factory=list)  # the window before's outputs' address ranges (alive
    # in the peer until its next Collect: no output of the next window may lie there)

    def read(self, described: object, calls: int, arena: Arena, out_start: int,
             reads: Reads | None = None) -> list[list[dict]]:
        """The window's outputs copied into ``arena`` from ``out_start`` (the peer is stopped); their arena spec
        per call, as a peer's own Collect reports it. ``reads``: what of each call is read (None: everything);
        an output read as runs is placed as their elements one after another, and its spec entry says
        ``sampled``: the output's own shape and where the runs start. RemoteReadError names what was wrong."""
        per_call = self._layouts(described, calls)
        spans = [span for lays in per_call for span in _merged([(lay.offset, lay.offset + lay.span()) for lay in lays])]
        self._check_disjoint(spans)
        offset, whole, runs, out = align(out_start), [], [], []
        for call, lays in enumerate(per_call):
            specs = []
            for lay in lays:
                starts = reads.starts(call, lay) if reads is not None else None
                size = lay.span() if starts is None else RUNS * RUN * lay.itemsize
                end = offset + max(size, 1)
                if end > arena.size:
                    raise RemoteReadError("its outputs are larger than the task's outputs allow")
                if starts is None:
                    whole.append((lay.offset, offset, size))
                    specs.append({"t": "tensor", **TensorLayout(offset, lay.shape, lay.stride, lay.dtype).to_json()})
                else:
                    runs.append((lay.offset + starts * lay.itemsize, offset, RUN * lay.itemsize))
                    specs.append({"t": "tensor", "offset": offset, "shape": [RUNS * RUN], "stride": [1],
                                  "dtype": lay.dtype, "sampled": {"shape": list(lay.shape), "starts": starts.tolist()}})
                offset = align(end)
            out.append(specs)
        self._copy(arena, *_pieces(whole, runs))
        self.kept = spans
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

    def _copy(self, arena: Arena, remote: np.ndarray, local: np.ndarray, length: np.ndarray) -> None:
        """Copy pieces (remote address, arena offset, bytes: :func:`_pieces`): one system call per IOV_MAX pieces,
        the bytes split between this thread and a helper (a ReLU window's 68 outputs of 2 MiB: ~7 GB/s a thread)."""
        keep = length > 0
        remote, local, length = remote[keep], local[keep], length[keep]
        total = int(length.sum())
        if not total:
            return
        base = ctypes.addressof(ctypes.c_char.from_buffer(arena.map))
        if total < SPLIT_BYTES:
            halves = [(remote, local, length), None]
        else:  # split at the byte half way, inside a piece if need be
            ends = np.cumsum(length)
            k = int(np.searchsorted(ends, total // 2, side="right"))
            take = total // 2 - (int(ends[k - 1]) if k else 0)
            first = (np.append(remote[:k], remote[k]), np.append(local[:k], local[k]), np.append(length[:k], take))
            rest = (np.append(remote[k] + take, remote[k + 1:]), np.append(local[k] + take, local[k + 1:]),
                    np.append(length[k] - take, length[k + 1:]))
            halves = [first, rest]
        other = _helper.submit(_read_pieces, self.pid, base, *halves[1]) if halves[1] is not None else None
        problems = [_read_pieces(self.pid, base, *halves[0])]
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


def _pieces(whole: list[tuple[int, int, int]], runs: list[tuple[np.ndarray, int, int]] = ()) -> tuple[np.ndarray, ...]:
    """(remote addresses, arena offsets, byte counts) of the pieces to read: each whole output one piece
    (address, offset, bytes), each output read as runs RUNS pieces (the runs' addresses, where the first is placed,
    the bytes of one run: the others follow it)."""
    remote = [np.array([w[0] for w in whole], np.uint64)] + [r[0].astype(np.uint64) for r in runs]
    local = [np.array([w[1] for w in whole], np.uint64)] + [r[1] + np.arange(len(r[0]), dtype=np.uint64) * r[2] for r in runs]
    length = [np.array([w[2] for w in whole], np.uint64)] + [np.full(len(r[0]), r[2], np.uint64) for r in runs]
    return np.concatenate(remote), np.concatenate(local), np.concatenate(length)


def _read_pieces(pid: int, base: int, remote: np.ndarray, local: np.ndarray, length: np.ndarray) -> str:
    """"" when every piece was read; else why not. The iovec arrays are built by numpy (struct iovec: an address
    and a length, 8 bytes each): a window of 161 outputs read as 16 runs each is 2,576 pieces."""
    there, here = np.empty((len(remote), 2), np.uint64), np.empty((len(remote), 2), np.uint64)
    there[:, 0], there[:, 1] = remote, length
    here[:, 0], here[:, 1] = local + np.uint64(base), length
    for at in range(0, len(remote), IOV_MAX):
        n = min(IOV_MAX, len(remote) - at)
        want = int(length[at:at + n].sum())
        got = _libc.process_vm_readv(pid, ctypes.c_void_p(here[at:].ctypes.data), ctypes.c_ulong(n),
                                     ctypes.c_void_p(there[at:].ctypes.data), ctypes.c_ulong(n), ctypes.c_ulong(0))
        if got != want:
            return os.strerror(ctypes.get_errno()) if got < 0 else f"{got} of {want} bytes"
    return ""
