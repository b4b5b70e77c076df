"""How many calls one timed window holds, and the arenas that hold a window's inputs and outputs.

The fixed cost of a window (two pipe messages, a process woken, ~0.33 ms here:
``benchmarks/timing_floor``) is the same for every side, so it pulls a ratio towards 1 by its share of
the window. A window therefore holds as many calls as the faster side needs to fill ``window_ms``
(the calibration rounds' per-call times say how many, and the warm-up's again), as torch.utils.benchmark
and Google Benchmark time many iterations per measurement, bounded by ``max_calls`` and by memory: every
call has its own input set and keeps its outputs until the window ends, in arenas of at most
:data:`ARENA_BYTES` per side.
"""

from __future__ import annotations

import math
from dataclasses import replace

from verifier.monitor.rounds import Layout, Side, Turn
from verifier.sandbox.arena import Arena, align

ARENA_BYTES = 512 << 20  # one side's inputs and outputs for a whole window


def single(drawer) -> Layout:
    """The layout of the arenas the correctness phase made: one input set, then the outputs."""
    stride = align(drawer.input_bytes())
    return Layout(1, stride, stride)


def strides(drawer) -> tuple[int, int]:
    """(bytes per input set, bytes per call's outputs: room for twice the reference's, as in correctness)."""
    return align(drawer.input_bytes()), align(drawer.output_bytes() * 2 + 4096)


def room(max_calls: int, drawer) -> int:
    """The most calls a window may hold: ``max_calls``, or fewer where a side's arena would outgrow
    :data:`ARENA_BYTES`."""
    in_stride, out_stride = strides(drawer)
    return max(1, min(max_calls, ARENA_BYTES // (in_stride + out_stride)))


def calls_per_window(turns: list[Turn], window_ms: float, most: int) -> int:
    """How many calls of the fastest per-call time among ``turns`` fill ``window_ms`` (at most ``most``)."""
    fastest = min(turn.ms_per_call for turn in turns)
    return max(1, min(math.ceil(window_ms / max(fastest, 1e-3)), most))


def resize(sides: list[Side], calls: int, most: int, drawer, owned: list[Arena]) -> Layout:
    """New arenas with room for windows of ``most`` calls, attached to every side (the old ones stay
    mapped in the sides until they end; pages are used only where written), appended to ``owned`` for
    the verification to close; the layout of windows of ``calls`` calls in them (:func:`regrow` changes
    that without new arenas)."""
    in_stride, out_stride = strides(drawer)
    out_start = most * in_stride
    for side in sides:
        arena = Arena.create(out_start + most * out_stride)
        owned.append(arena)
        side.attach(arena)
        side.arena = arena
    return Layout(calls, in_stride, out_start)


def regrow(layout: Layout, warm: list[Turn], window_ms: float, most: int) -> Layout:
    """The layout once the warm-up rounds ran: a single call (the calibration rounds') pays for fresh
    pages and a cold cache, and a ReLU on 2 MB read 1.5-2.5 ms alone against 0.3 ms per call inside a
    window; windows sized by it held a quarter of ``window_ms``. The warm-up's calls (their first
    window is cold too: the fastest side's counts) size them again, never smaller."""
    calls = calls_per_window(warm, window_ms, most)
    return replace(layout, calls=calls) if calls > layout.calls else layout
