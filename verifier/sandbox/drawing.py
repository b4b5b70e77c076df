"""Drawing a round's input sets in the reference worker, on both CPUs (reference-worker side, imports torch).

A timed window needs a fresh input set for every call, and the task's ``get_inputs()`` draws them with
torch's random functions at ~5 ns an element on this machine, ten times what a memory-bound kernel
takes to read them: drawing was most of what a verification cost. The common random calls (``randn``,
``rand``, their ``_like`` forms, ``normal_``, ``uniform_`` on float tensors) now draw from a native fill
(verifier.sandbox.fast_fill, ~1.5 ns an element) where the worker could load it. Every side is stopped while the
drawer draws, so both CPUs are free; but every random function draws from torch's one global
generator, under its lock, so two threads calling ``get_inputs()`` would take turns. Here each timed
set is drawn under a :class:`OwnGenerator` mode (a ``TorchFunctionMode``, local to its thread), which
hands the task's random calls a generator of the set's own, seeded from the verification's secret
seed and the set's index: two threads draw at once, and a set's values do not depend on which thread
drew it. Sets of the trial plan (the audits placed among the timed calls) are drawn alone, before the
timed ones, with the global generator as everywhere else, so they are the plan's inputs bit for bit.

The drawing threads run torch on one thread each: a parallel region started from a second thread would
give the process a second OpenMP team, and with more OpenMP threads than CPUs libgomp stops spinning
between regions in every team (the reference's GEMM + bias + ReLU read 0.67 ms a call instead of 0.42).
Their allocations come from allocator arenas of their own (glibc gives each thread one), so sets drawn
and freed between windows leave the heap the timed calls take their outputs from as the other sides'
(drawing on that heap grew it by one input set a round for 40 rounds, and the drawer's windows faulted
4,608 pages a call).

Where the native fill stands in for a call, it fills the place the set's tensor takes in the arena the monitor
reads (:class:`ArenaSlots`), so a set returned as drawn is not copied there afterwards (:func:`place`).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import torch
from torch.overrides import TorchFunctionMode

from verifier.sandbox.arena import align
from verifier.sandbox.fast_fill import Fill, call_seed, stand_in
from verifier.sandbox.values import next_place

THREADS = 2

_T = torch.Tensor
RANDOM = frozenset({  # every torch function that draws from a generator and takes ``generator=``
    torch.randn, torch.rand, torch.randint, torch.randn_like, torch.rand_like, torch.randint_like, torch.normal,
    torch.randperm, torch.bernoulli, torch.multinomial, torch.poisson,
    _T.normal_, _T.uniform_, _T.random_, _T.bernoulli_, _T.exponential_, _T.cauchy_, _T.log_normal_, _T.geometric_,
})


class OwnGenerator(TorchFunctionMode):
    """Random functions called without a generator get ``generator`` (this thread only); with ``fill``
    (verifier.sandbox.fast_fill), the calls it stands in for draw from it instead, each random call from
    a stream of its own derived from the generator's seed."""

    def __init__(self, generator: torch.Generator, fill: Fill | None = None, slots: "ArenaSlots | None" = None) -> None:
        super().__init__()
        self.generator = generator
        self.fill = fill
        self.slots = slots
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in RANDOM and kwargs.get("generator") is None:
            if self.fill is not None:
                self.calls += 1
                out = stand_in(self.fill, func, args, kwargs, call_seed(self.generator.initial_seed(), self.calls),
                               self.slots)
                if out is not None:
                    return out
            kwargs["generator"] = self.generator
        return func(*args, **kwargs)


class Drawers:
    """The drawing threads of one reference worker (started with the first round drawn)."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(THREADS, thread_name_prefix="draw", initializer=torch.set_num_threads,
                                       initargs=(1,))

    def draw(self, trials: list[Callable[[], object]], timed: list[Callable[[], object]]) -> tuple[list, list]:
        """Every job's result: the trial plan's jobs one after another (the global generator, in plan
        order), then the timed jobs spread over the threads."""
        trial_results = self.pool.submit(lambda: [job() for job in trials]).result() if trials else []
        return trial_results, [future.result() for future in [self.pool.submit(job) for job in timed]]


def timed_set(get_inputs: Callable[[], list], seed: int, fill: Fill | None = None,
              slots: "ArenaSlots | None" = None) -> list:
    """``get_inputs()`` with every random call drawing from a generator of its own, seeded ``seed`` (and
    with ``fill`` where it stands in for the call, into ``slots`` where given)."""
    with OwnGenerator(torch.Generator().manual_seed(seed), fill, slots):
        return list(get_inputs())


class ArenaSlots:
    """Where the native fill writes a timed set's new tensors: the places
    verifier.sandbox.values.layout_spec gives the set's tensors in the arena (from ``start``), in the order
    they are drawn, so that a set returned as drawn (``torch.randn(...)`` and the like, the common case) is
    filled where the monitor reads it and :func:`place` copies nothing (a copy of 2 MiB a set, 22% of a ReLU
    round's drawing). A tensor that would pass ``end`` (the set's room) gets None: a tensor of its own."""

    def __init__(self, base: torch.Tensor, start: int, end: int) -> None:
        self.base, self.offset, self.end = base, align(start), end

    def __call__(self, shape: tuple[int, ...]) -> torch.Tensor | None:
        span = math.prod(shape) * 4  # float32: the only dtype the fill writes
        offset, after = next_place(self.offset, span)
        if offset + span > self.end:
            self.offset = self.end
            return None
        self.offset = after
        return self.base[offset: offset + span].view(torch.float32).view(shape)


def place(base: torch.Tensor, placed: list, view: Callable) -> None:
    """Write each drawn tensor of ``placed`` (``(layout, Shaped)``, verifier.sandbox.values.layout_spec) at its
    layout in ``base``: nothing for a tensor filled there already (:class:`ArenaSlots`); a tensor filled
    elsewhere in ``base`` (returned in another order, or only used to compute another) is copied out of it
    before anything is written over it."""
    low, high = base.data_ptr(), base.data_ptr() + base.numel()
    moves = []
    for layout, value in placed:
        target, payload = view(base, layout), value.payload
        if (payload.data_ptr() == target.data_ptr() and payload.dtype == target.dtype
                and payload.shape == target.shape and payload.stride() == target.stride()):
            continue
        moves.append((target, payload.clone() if low <= payload.data_ptr() < high else payload))
    for target, payload in moves:
        target.copy_(payload)
