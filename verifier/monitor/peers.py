"""The monitor's conversation with its compute peers, the runner and the reference worker: one window
of calls at a time, the monitor's clock around it, every answer validated before it is believed.

A window (verifier.sandbox.serve): Stage makes a layout of input sets ready (untimed: on the CPU,
views of the arena, valid for every later window on the same layout), the monitor writes the inputs
into the peer's arena, Run calls forward on each set (the monitor's ``perf_counter_ns`` brackets
exactly this command and its answer), Collect has the outputs copied into the arena (untimed), and the monitor validates the output layouts the peer reports against the arena
and copies the outputs out at once (:func:`read_outputs`). A peer that dies, hangs, floods its channel
or answers garbage raises :class:`PeerFailure` with one line saying which, never anything else.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from contextlib import nullcontext
from typing import Callable, ContextManager

import numpy as np

from verifier.monitor.remote_outputs import Reads, RemoteOutputs, RemoteReadError, Sampled
from verifier.sandbox import messages as msg
from verifier.sandbox.arena import Arena, ArenaError
from verifier.sandbox.channel import ChannelClosed, ChannelError, ChannelTimeout
from verifier.sandbox.spawn import Sandboxed
from verifier.sandbox.values import layouts_in

MAX_ANSWER = 1 << 20  # a Done or CallFailed frame (layouts and a short error) is far smaller


class PeerFailure(Exception):
    """The peer did not answer as the protocol says: ``kind`` is "timeout", "died", "malformed",
    "integrity" (the runner's contract check failed) or "raised" (the candidate's code raised;
    ``detail`` holds its frames)."""

    def __init__(self, kind: str, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.kind, self.reason, self.detail = kind, reason, detail


@dataclass(frozen=True)
class Answer:
    """One window's outcome: per call, its outputs (copied out of the arena) and their dtypes."""

    outputs: tuple[tuple[np.ndarray, ...], ...]
    dtypes: tuple[tuple[str, ...], ...]
    ns: int  # the monitor's clock around Run: every call of the window
    native_calls: int
    note: str = ""
    marks: tuple = ()  # the ledger's readings before Run, after Run, after Collect
    calls: int = 0  # calls in the window (``outputs`` may be dropped once they were checked)
    described: object = None  # where the outputs lie in the peer's memory (Collect with describe): read by
    # the monitor once the peer is stopped (:func:`read_described`), ``outputs`` empty until then
    sampled: tuple[tuple[Sampled | None, ...], ...] = ()  # per call, per output: read as runs (the output is
    # their elements), or None (read whole); empty: every output whole
    first_call_excess_ns: int = 0  # what the peer says its first call took beyond its median call (trusted
    # only from the reference worker: verifier.monitor.window_size.cold_cost)

    def settled(self) -> "Answer":
        """The answer without its outputs (checked; borrowed views of an arena must not outlive the round)."""
        return replace(self, outputs=(), dtypes=(), sampled=())


def receive(process: Sandboxed, deadline: float, expect: tuple[type, ...], during: str, max_bytes: int = MAX_ANSWER):
    """The peer's next message, one of ``expect``; PeerFailure otherwise."""
    try:
        return process.receive(deadline, max_bytes, expect)
    except ChannelTimeout:
        process.kill()
        raise PeerFailure("timeout", f"timed out during {during} (infinite loop or far too slow?)") from None
    except ChannelClosed:
        raise PeerFailure("died", f"{process.exit_reason()} during {during}", process.log_tail()) from None
    except ChannelError as exc:
        process.kill()
        raise PeerFailure("malformed", f"the sandbox process answered out of protocol during {during}: "
                                       f"{str(exc)[:150]}") from None


def _send(process: Sandboxed, message, during: str) -> None:
    if not process.send(message):
        raise PeerFailure("died", f"{process.exit_reason()} during {during}", process.log_tail())


def _failed(answer: msg.CallFailed) -> PeerFailure:
    if answer.integrity:
        return PeerFailure("integrity", answer.error[:300], answer.error)
    last = answer.error.strip().splitlines()[-1] if answer.error.strip() else "an exception"
    return PeerFailure("raised", f"forward raised {last}"[:300], answer.error)


def window(process: Sandboxed, arena: Arena, sets: list[list], out_start: int, deadline: float, during: str) -> Answer:
    """Forward on each of ``sets`` (inputs already in ``arena``): staged, then run as one timed window."""
    stage(process, sets, deadline, during)
    return run(process, arena, len(sets), out_start, deadline, during)


def stage(process: Sandboxed, sets: list[list], deadline: float, during: str) -> None:
    """The peer makes ``sets`` ready for the next Run (untimed); on the CPU it only builds views of the
    arena, so the inputs may be written after it, and it stays valid for later windows on the same layout."""
    stage_send(process, sets, during)
    stage_wait(process, deadline, during)


def stage_send(process: Sandboxed, sets: list[list], during: str) -> None:
    """:func:`stage`'s request alone, so that several peers stage at once (:func:`stage_wait` for each)."""
    _send(process, msg.Stage(sets), during)


def stage_wait(process: Sandboxed, deadline: float, during: str) -> None:
    """The Staged answer to :func:`stage_send`'s request."""
    got = receive(process, deadline, (msg.Staged, msg.CallFailed), during)
    if isinstance(got, msg.CallFailed):
        raise _failed(got)


def run(process: Sandboxed, arena: Arena, calls: int, out_start: int, deadline: float, during: str,
        mark: Callable[[], object] | None = None, clock: Callable[[], ContextManager] = nullcontext,
        borrow: bool = False, describe: bool = False) -> Answer:
    """One timed window on the staged sets; the outputs, collected and copied. ``mark``: a reading taken
    right before and after the timed Run and after Collect; ``clock``: entered around all of it (the
    monitor's thread first in line for a CPU meanwhile, so its clock and its readings are not late).
    ``borrow``: the outputs are views of the arena, not copies (the caller stops the peer before it reads
    them, and drops them before the peer runs again: verifier.monitor.rounds). ``describe``: the peer only
    says where its outputs lie (``Answer.described``); the caller stops it and reads them
    (:func:`read_described`)."""
    with clock():  # the monitor's thread first in line for a CPU from the first reading to the last: a
        # reading taken at normal priority waits behind the side's threads (nice -20, spinning after forward)
        marks = [mark()] if mark else []
        start = time.perf_counter_ns()
        ran = _ask(process, msg.Run(calls), deadline, msg.Ran, during)
        ns = time.perf_counter_ns() - start
        marks += [mark()] if mark else []
        if isinstance(ran, msg.CallFailed):
            raise _failed(ran)
        collected = _expect(process, msg.Collect(out_start, describe), deadline,
                            msg.Described if describe else msg.Collected, during)
        marks += [mark()] if mark else []
    excess = max(0, int(collected.first_call_excess_ns))
    if describe:
        return Answer((), (), ns, max(0, int(collected.native_calls)), collected.note[:2000], tuple(marks), calls,
                      collected.outputs, first_call_excess_ns=excess)
    outputs, dtypes = read_outputs(arena, collected.outputs, out_start, calls, during, borrow)
    return Answer(outputs, dtypes, ns, max(0, int(collected.native_calls)), collected.note[:2000], tuple(marks),
                  calls, first_call_excess_ns=excess)


def read_described(remote: RemoteOutputs, answer: Answer, arena: Arena, out_start: int, during: str,
                   reads: Reads | None = None) -> Answer:
    """``answer`` with its outputs: read by the monitor out of the stopped peer's memory into ``arena``
    (verifier.monitor.remote_outputs; ``reads``: what of each call), then borrowed as a Collect's are."""
    try:
        spec = remote.read(answer.described, answer.calls, arena, out_start, reads)
    except RemoteReadError as exc:
        raise PeerFailure(exc.kind, f"{exc} (during {during})"[:300]) from None
    outputs, dtypes = read_outputs(arena, spec, out_start, answer.calls, during, borrow=True)
    sampled = tuple(tuple(Sampled.of(item) for item in call) for call in spec)
    return replace(answer, outputs=outputs, dtypes=dtypes, described=None, sampled=sampled)


def empty(process: Sandboxed, deadline: float, during: str, clock: Callable[[], ContextManager] = nullcontext) -> int:
    """The monitor's clock around an empty window (Run of no call): what every window costs besides its
    calls (two pipe messages, the peer's loop, the monitor woken), in ns."""
    with clock():
        start = time.perf_counter_ns()
        ran = _ask(process, msg.Run(0), deadline, msg.Ran, during)
        ns = time.perf_counter_ns() - start
    if isinstance(ran, msg.CallFailed):
        raise _failed(ran)
    return ns


def _ask(process: Sandboxed, request, deadline: float, answer: type, during: str):
    _send(process, request, during)
    return receive(process, deadline, (answer, msg.CallFailed), during)


def _expect(process: Sandboxed, request, deadline: float, answer: type, during: str):
    got = _ask(process, request, deadline, answer, during)
    if isinstance(got, msg.CallFailed):
        raise _failed(got)
    return got


def read_outputs(arena: Arena, spec: list, out_start: int, calls: int, during: str,
                 borrow: bool = False) -> tuple[tuple[tuple[np.ndarray, ...], ...], tuple[tuple[str, ...], ...]]:
    """The outputs a peer reports for each call of a window, validated (inside the output region, none
    overlapping another) and copied (``borrow``: read-only views, bfloat16 still widened into a copy)."""
    try:
        if not isinstance(spec, list) or len(spec) != calls or not all(isinstance(s, list) for s in spec):
            raise ArenaError(f"outputs must be one list per call ({calls})")
        per_call = [layouts_in(s, arena.size) for s in spec]
        if any(len(lays) != len(s) or len(lays) > 64 for lays, s in zip(per_call, spec)):
            raise ArenaError("outputs must be a flat list of tensors per call")
        flat = [lay for lays in per_call for lay in lays]
        ends = sorted((lay.offset, lay.offset + lay.span()) for lay in flat)
        if any(lay.offset < out_start for lay in flat) or any(a[1] > b[0] for a, b in zip(ends, ends[1:])):
            raise ArenaError("output layouts overlap or leave the output region")
        read = arena.borrow if borrow else arena.read
        return (tuple(tuple(read(lay) for lay in lays) for lays in per_call),
                tuple(tuple(lay.dtype for lay in lays) for lays in per_call))
    except (ArenaError, ValueError, TypeError) as exc:
        raise PeerFailure("malformed", f"the sandbox process reported its outputs out of protocol during "
                                       f"{during}: {str(exc)[:150]}") from None
