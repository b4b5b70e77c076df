"""How many calls one timed window holds, and the arenas that hold a window's inputs and outputs.

A window holds as many calls as the faster side needs to fill ``window_ms`` (the calibration rounds'
per-call times say how many, and the warm-up's again), as torch.utils.benchmark and Google Benchmark
time many iterations per measurement, bounded by ``max_calls`` and by memory: every call has its own
input set and keeps its outputs until the window ends, in arenas of at most :data:`ARENA_BYTES` per
side. Every call's inputs are drawn fresh, and drawing them costs more than many a kernel (the task's
``torch.randn`` at ~5 ns an element against a ReLU's ~0.3 ns): where a round's draws would take more
than ``draw_ms_per_round`` (VerifySettings), a window holds fewer calls, down to ``min_window_ms``. The fixed
cost of a window (two pipe messages, a process woken, ~0.33 ms here: ``benchmarks/timing_floor``) is
measured by an empty window after the record side's every window and subtracted (verifier.monitor.timing),
so a short window is not pulled towards a ratio of 1.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from verifier.monitor.rounds import Layout, Side, Turn
from verifier.sandbox.arena import Arena, align, page_round

ARENA_BYTES = 512 << 20  # one side's inputs and outputs for a whole window


def single(drawer) -> Layout:
    """The layout of the arenas the correctness phase made: one input set, then the outputs."""
    stride = align(drawer.input_bytes())
    return Layout(1, stride, stride)


def strides(drawer) -> tuple[int, int]:
    """(bytes per input set, bytes per call's outputs: room for twice the reference's, as in correctness).
    A set's bytes are whole pages: every set then has its tensors at the same places in a page as the first
    (verifier.sandbox.arena.place), and as many bytes."""
    return page_round(drawer.input_bytes()), align(drawer.output_bytes() * 2 + 4096)


def room(max_calls: int, drawer) -> int:
    """The most calls a window may hold: ``max_calls``, or fewer where a side's arena would outgrow
    :data:`ARENA_BYTES`."""
    in_stride, out_stride = strides(drawer)
    return max(1, min(max_calls, ARENA_BYTES // (in_stride + out_stride)))


def fixed_cost(turns: list[Turn]) -> float:
    """The median empty window (ns) among ``turns`` (the record side's, verifier.monitor.rounds)."""
    empties = [turn.empty_ns for turn in turns if turn.side == 0 and turn.empty_ns > 0]
    return statistics.median(empties) if empties else 0.0


def cold_cost(turns: list[Turn]) -> float:
    """The median of what the record side's (the trusted reference worker's) first call of a window took
    beyond its median call (ns; verifier.sandbox.serve.first_call_excess), over ``turns`` of three calls or
    more. A window starts with its side's threads asleep, on cores that may have gone idle, where a user's
    loop of back-to-back calls finds them awake: every side pays this once a window, and it is taken off every
    side's windows as the fixed cost is. A runner's own figure is never read: it could say anything."""
    excess = [turn.answer.first_call_excess_ns for turn in turns if turn.side == 0 and turn.answer.calls >= 3]
    return float(statistics.median(excess)) if excess else 0.0


def calls_per_window(turns: list[Turn], window_ms: float, most: int, draw_ms: float = 0.0,
                     shortest_ms: float = 10.0, draw_budget_ms: float = 60.0) -> int:
    """How many calls of the fastest per-call time among ``turns`` (their windows less the fixed cost:
    a window of one call is mostly that) fill ``window_ms`` (at most ``most``); fewer where drawing
    their inputs (``draw_ms`` per input set) would take more than ``draw_budget_ms``, though never a
    window shorter than ``shortest_ms``."""
    fixed = fixed_cost(turns)
    fastest = max(min(turn.ms_per_call_less(fixed) for turn in turns), 1e-3)
    calls = math.ceil(window_ms / fastest)
    if draw_ms > 0 and calls * draw_ms > draw_budget_ms:
        calls = min(calls, max(math.ceil(min(shortest_ms, window_ms) / fastest), int(draw_budget_ms // draw_ms)))
    return max(1, min(calls, most))


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


def regrow(layout: Layout, warm: list[Turn], window_ms: float, most: int, draw_ms: float = 0.0,
           shortest_ms: float = 10.0, draw_budget_ms: float = 60.0) -> Layout:
    """The layout once the warm-up rounds ran: a single call (the calibration rounds') pays for fresh
    pages and a cold cache, and a ReLU on 2 MB read 1.5-2.5 ms alone against 0.3 ms per call inside a
    window; windows sized by it held a quarter of ``window_ms``. The warm-up's calls (their first
    window is cold too: the fastest side's counts) size them again, never smaller."""
    calls = calls_per_window(warm, window_ms, most, draw_ms, shortest_ms, draw_budget_ms)
    return replace(layout, calls=calls) if calls > layout.calls else layout
