"""The monitor's conversation with its two compute peers, the runner and the reference worker: one
call at a time, the monitor's clock around it, every answer validated before it is believed.

A call: the inputs are already in the peer's arena (the monitor put them there); the monitor sends
Call and reads Done, timing the round trip with ``perf_counter_ns``; it then validates the output
layouts the peer reports against the arena and copies the outputs out at once (:func:`read_outputs`).
A peer that dies, hangs, floods its channel or answers garbage raises :class:`PeerFailure` with one
line saying which, never anything else.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

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
    outputs: tuple[np.ndarray, ...]
    dtypes: tuple[str, ...]
    ns: int  # the monitor's clock around the call
    native_calls: int
    collect_ns: int = 0  # staged calls: the clock around fetching the outputs (a copy, nothing more)
    note: str = ""


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


def call(process: Sandboxed, arena: Arena, inputs: list, out_start: int, deadline: float, during: str,
         staged: bool = False) -> Answer:
    """One timed call of ``forward`` on inputs already in ``arena``; the outputs, copied out. ``staged``
    (a device): Prime untimed, Call timed to Ran, Collect timed apart."""
    if staged:
        _send(process, msg.Prime(inputs), during)
        primed = receive(process, deadline, (msg.Primed, msg.CallFailed), during)
        if isinstance(primed, msg.CallFailed):
            raise _failed(primed)
    start = time.perf_counter_ns()
    _send(process, msg.Call(inputs, out_start, staged), during)
    answer = receive(process, deadline, (msg.Ran if staged else msg.Done, msg.CallFailed), during)
    ns = time.perf_counter_ns() - start
    collect_ns = 0
    if staged and not isinstance(answer, msg.CallFailed):
        start = time.perf_counter_ns()
        _send(process, msg.Collect(out_start), during)
        answer = receive(process, deadline, (msg.Done, msg.CallFailed), during)
        collect_ns = time.perf_counter_ns() - start
    if isinstance(answer, msg.CallFailed):
        raise _failed(answer)
    outputs, dtypes = read_outputs(arena, answer.outputs, out_start, during)
    return Answer(outputs, dtypes, ns, max(0, int(answer.native_calls)), collect_ns, answer.note[:2000])


def read_outputs(arena: Arena, spec: list, out_start: int, during: str) -> tuple[tuple[np.ndarray, ...], tuple[str, ...]]:
    """The outputs a peer reports, validated (inside the output region, not overlapping) and copied."""
    try:
        layouts = layouts_in(spec, arena.size)
        if len(layouts) != len(spec) or len(layouts) > 64:
            raise ArenaError("outputs must be a flat list of tensors")
        ends = sorted((lay.offset, lay.offset + lay.span()) for lay in layouts)
        if any(lay.offset < out_start for lay in layouts) or any(a[1] > b[0] for a, b in zip(ends, ends[1:])):
            raise ArenaError("output layouts overlap or leave the output region")
        return tuple(arena.read(lay) for lay in layouts), tuple(lay.dtype for lay in layouts)
    except (ArenaError, ValueError, TypeError) as exc:
        raise PeerFailure("malformed", f"the sandbox process reported its outputs out of protocol during "
                                       f"{during}: {str(exc)[:150]}") from None
