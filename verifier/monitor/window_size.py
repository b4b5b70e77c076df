"""How many calls one timed window holds, and the arenas that hold a window's inputs and outputs.

The fixed cost of a window (two pipe messages, a process woken, ~0.1-0.2 ms here:
``benchmarks/timing_floor``) is the same for every side, so it pulls a ratio towards 1 by its share of
the window. A window therefore holds as many calls as the faster side needs to fill ``window_ms``
(the calibration round's per-call times say how many), as torch.utils.benchmark and Google Benchmark
time many iterations per measurement, bounded by ``max_calls`` and by memory: every call has its own
input set and keeps its outputs until the window ends, in arenas of at most :data:`ARENA_BYTES` per side.
"""

from __future__ import annotations

import math

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


def calls_per_window(calibration: list[Turn], window_ms: float, max_calls: int, drawer) -> int:
    fastest = min(turn.ms_per_call for turn in calibration)
    wanted = math.ceil(window_ms / max(fastest, 1e-3))
    in_stride, out_stride = strides(drawer)
    return max(1, min(wanted, max_calls, ARENA_BYTES // (in_stride + out_stride)))


def resize(sides: list[Side], calls: int, drawer, owned: list[Arena]) -> Layout:
    """New arenas for windows of ``calls`` calls, attached to every side (the old ones stay mapped in the
    sides until they end); appended to ``owned`` for the verification to close."""
    in_stride, out_stride = strides(drawer)
    out_start = calls * in_stride
    for side in sides:
        arena = Arena.create(out_start + calls * out_stride)
        owned.append(arena)
        side.attach(arena)
        side.arena = arena
    return Layout(calls, in_stride, out_start)
