"""Shape-preserving size profiles: shrink every large dimension of a task together until it fits.

A KernelBench task at its original sizes can take seconds and gigabytes per forward; a CPU
verification needs milliseconds. Shrinking the batch alone turns a 1024x8192x8192 GEMM into a
GEMV and leaves Softmax with two 393216-wide rows: a different kernel. Here the shrink is spread
geometrically: every scalable size (see :mod:`kernelbench_npu.size_params`) is halved in turn, the
least-shrunk first, so after any number of steps their shrink factors differ by at most 2x, until
the meta-device estimate (:mod:`kernelbench_npu.cost`) is inside the time target and the memory
budget. A dimension stops early, and says why, when

- halving it again would take it below its role's floor (``size_params.FLOORS``: a GEMM keeps
  M, N, K >= 64, a batch 2, a sequence 32, channels and spatial extents 8), or
- the model no longer runs on the meta device with it halved (a flattened classifier that needs
  a 224x224 image, a size that must divide another): it is pinned at the last size that ran.

Halving keeps structure: a size divisible by 2^k is divided exactly (powers of two stay powers of
two, so group counts keep dividing channels); awkward sizes stay awkward (4095 -> 1025, odd stays
odd, a non-multiple of 8 never becomes one). Everything is deterministic: no timing is involved.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from kernelbench_npu.cost import Cost, CostError, cost_from_dict, estimate_cost
from kernelbench_npu.size_params import FLOORS, Site, find_sites, rewrite

BALANCE_MIN_SIZE = 64  # dims at least this large count in the balance figure
SLACK = 4.0  # a task that cannot reach the target keeps sizes up to 4x slower than its smallest
MAX_STEPS = 400


@dataclass(frozen=True)
class DimShrink:
    """One size of the task: where it started, where it ended and, if it stopped early, why."""

    key: str
    role: str
    original: int
    adapted: int
    note: str  # "" when it shrank with the others (or no shrink was needed)

    @property
    def shrink(self) -> float:
        return self.original / self.adapted


@dataclass(frozen=True)
class SizeFit:
    """The outcome of fitting a problem to a size profile."""

    source: str  # the adapted source
    original: dict[str, int]  # every size site as written
    adapted: dict[str, int]  # the same sites after the fit
    dims: tuple[DimShrink, ...]
    cost: Cost
    note: str  # one line: how it was fitted

    @property
    def balance(self) -> float | None:
        """Largest over smallest shrink factor among dims originally >= 64 (None: fewer than one)."""
        return balance([d for d in self.dims])

    def dims_json(self) -> str:
        return json.dumps([asdict(d) for d in self.dims])

    def as_dict(self) -> dict:
        """Plain data (JSON-able) for the lint worker's pipe; :func:`fit_from_dict` reverses it."""
        return {"source": self.source, "original": self.original, "adapted": self.adapted,
                "dims": [asdict(d) for d in self.dims], "cost": asdict(self.cost), "note": self.note}


def fit_from_dict(data: dict) -> SizeFit:
    return SizeFit(data["source"], dict(data["original"]), dict(data["adapted"]),
                   tuple(DimShrink(**d) for d in data["dims"]), cost_from_dict(data["cost"]), data["note"])


def original_fit(source: str, cost: Cost, note: str = "original sizes") -> SizeFit:
    """The task at the sizes it was written with (the original-size variants)."""
    sites = find_sites(source)
    original = {s.key: s.value for s in sites}
    return SizeFit(source, original, original, _dims(sites, {}, {}, "kept: the variant uses the original sizes"),
                   cost, note)


def fit_profile(source: str, profile, path: str = "<problem>", dtype: str = "float32") -> SizeFit:
    """:func:`fit_to_budget` with a :class:`kernelbench_npu.variants.SizeProfile`'s targets; the one
    function both the build (lint sizes) and the verifier (interpreter correctness sizes) call, so
    they get the same sizes for the same source."""
    return fit_to_budget(source, profile.target_ms, profile.keep_below_ms, profile.memory_bytes, dtype, path,
                         profile.budget_ms, profile.min_bytes)


def balance(dims: list[DimShrink]) -> float | None:
    shrinks = [d.shrink for d in dims if d.original >= BALANCE_MIN_SIZE and d.role in FLOORS]
    return max(shrinks) / min(shrinks) if shrinks else None


def halve(value: int, times: int) -> int:
    """``value`` halved ``times`` times, keeping its structure (see the module docstring)."""
    if times <= 0:
        return value
    if value % (1 << times) == 0:
        return value >> times
    grain = min(value & -value, 8)
    new = max(1, round(value / (1 << times) / grain) * grain)
    if value % 8 and new % 8 == 0:  # keep awkward sizes awkward (tails matter to SIMD/NPU kernels)
        new += 1
    if value % 2 and new % 2 == 0:
        new += 1
    return min(new, value)


def fit_to_budget(source: str, target_ms: float, keep_below_ms: float, memory_bytes: int,
                  dtype: str = "float32", path: str = "<problem>", budget_ms: float | None = None,
                  min_bytes: int = 0) -> SizeFit:
    """Shrink the task's sizes together until the estimate is <= ``target_ms`` and its footprint
    <= ``memory_bytes``; tasks already <= ``keep_below_ms`` (and within memory) keep their sizes.

    When floors or pinned sizes (a 224x224 image feeding a fixed classifier) keep ``target_ms`` out
    of reach, crushing every other size to its floor buys little: the task goes back to the first
    sizes on the way whose estimate is within ``SLACK`` times that of the smallest sizes (and
    within ``budget_ms``), so VGG keeps a quarter of its channels rather than 8 of each.

    A task is never shrunk below ``min_bytes`` of tensors (inputs, output, parameters): the search stops
    at the last sizes above it, whatever the estimate says (a task written smaller keeps its sizes).

    Raises CostError when the original sizes cannot run on the meta device."""
    sites = find_sites(source)
    original = {s.key: s.value for s in sites}
    cost = estimate_cost(source, dtype, path)
    if cost.estimated_ms <= keep_below_ms and cost.footprint_bytes <= memory_bytes:
        return SizeFit(source, original, original, _dims(sites, {}, {}, "kept: the original sizes fit"), cost,
                       "original sizes (estimate within budget)")
    search = _Search(source, sites, dtype, path, cost)
    note = "shrunk together in {} halvings"
    if not search.run(lambda c: c.estimated_ms <= target_ms and c.footprint_bytes <= memory_bytes):
        smallest = search.cost.estimated_ms
        limit = min(budget_ms if budget_ms is not None else math.inf, max(target_ms, SLACK * smallest))
        if search.go_back(lambda c: c.estimated_ms <= limit and c.footprint_bytes <= memory_bytes):
            note += (f" to the first sizes within {limit:.3g} ms ({SLACK:g}x the {smallest:.3g} ms of the smallest "
                     f"sizes: floors and pinned sizes keep {target_ms:g} ms out of reach)")
        else:
            note = f"could not reach {target_ms:g} ms: every size is at its floor or pinned ({{}} halvings)"
    if search.cost.footprint_bytes < min_bytes <= cost.footprint_bytes and search.back_above(min_bytes):
        note += f", then back to the last sizes with at least {min_bytes / 2**20:g} MiB of tensors"
    values = {s.key: halve(s.value, search.exponents.get(s.key, 0)) for s in sites}
    dims = _dims(sites, search.exponents, search.stopped, "")
    return SizeFit(search.source, original, values, dims, search.cost, note.format(sum(search.exponents.values())))


class _Search:
    """Halve the least-shrunk scalable sizes, one unit at a time, until ``fits(cost)``.

    A *unit* is a set of sites that always move together: sizes of one role with the same value
    (a square stays square, in == out channels stay equal), and sizes found to be tied by the
    model (HingeLoss needs ``batch_size == input_shape[0]``; a LayerNorm over the last axis needs
    it equal to the channel count): when halving a unit alone breaks the model, halving it with
    one other unit is tried before it is pinned."""

    def __init__(self, source: str, sites: tuple[Site, ...], dtype: str, path: str, cost: Cost) -> None:
        self.original, self.sites, self.dtype, self.path = source, sites, dtype, path
        self.source, self.cost = source, cost
        self.exponents: dict[str, int] = {s.key: 0 for s in sites if s.scalable}
        self.stopped: dict[str, str] = {}
        self.units: list[tuple[Site, ...]] = _initial_units([s for s in sites if s.scalable])
        self.history: list[tuple[dict[str, int], str, Cost, dict[str, str]]] = []  # states before each halving

    def run(self, fits) -> bool:
        """Halve until ``fits(cost)`` (True) or nothing can move (False); every state is kept."""
        for _ in range(MAX_STEPS):
            if fits(self.cost):
                return True
            unit = self._next()
            if unit is None:
                return False
            self._step(unit)
        return fits(self.cost)

    def go_back(self, good_enough) -> bool:
        """Return to the first state on the way whose cost is ``good_enough``; False if none was
        before the current one. Sizes found pinned stay pinned; floors reached later do not count."""
        for exponents, source, cost, stopped in self.history:
            if good_enough(cost):
                self.exponents, self.source, self.cost = exponents, source, cost
                self.stopped = {k: v for k, v in stopped.items() if v.startswith("pinned")}
                return True
        return False

    def back_above(self, min_bytes: int) -> bool:
        """Return to the most shrunk state on the way whose tensors still take ``min_bytes``."""
        for exponents, source, cost, stopped in reversed(self.history):
            if cost.footprint_bytes >= min_bytes:
                self.exponents, self.source, self.cost = exponents, source, cost
                self.stopped = {k: v for k, v in stopped.items() if v.startswith("pinned")}
                return True
        return False

    def _movable(self) -> list[tuple[Site, ...]]:
        return [u for u in self.units if u[0].key not in self.stopped]

    def _next(self) -> tuple[Site, ...] | None:
        order = {s.key: i for i, s in enumerate(self.sites)}
        movable = self._movable()
        if not movable:
            return None
        return min(movable, key=lambda u: (self.exponents[u[0].key],
                                           -min(halve(s.value, self.exponents[s.key]) / s.floor for s in u),
                                           order[u[0].key]))

    def _step(self, unit: tuple[Site, ...]) -> None:
        low = [s for s in unit if halve(s.value, self.exponents[s.key] + 1) < s.floor]
        if low:
            for s in unit:
                self.stopped[s.key] = f"at its floor ({s.role} >= {s.floor})" if s in low else \
                    f"moves with {low[0].key}, which is at its floor ({low[0].role} >= {low[0].floor})"
            return
        error = self._try(unit)
        if error is None:
            return
        for other in sorted((u for u in self._movable() if u is not unit), key=lambda u: self.exponents[u[0].key]):
            if all(halve(s.value, self.exponents[s.key] + 1) >= s.floor for s in other) and self._try(unit + other) is None:
                self.units = [u for u in self.units if u is not unit and u is not other] + [unit + other]
                return
        for s in unit:
            self.stopped[s.key] = f"pinned: the model does not run with {halve(s.value, self.exponents[s.key] + 1)} ({error})"

    def _try(self, unit: tuple[Site, ...]) -> str | None:
        """Halve every site of ``unit``; None on success, else the meta-device error."""
        trial = {**self.exponents, **{s.key: self.exponents[s.key] + 1 for s in unit}}
        candidate = rewrite(self.original, self.sites, {s.key: halve(s.value, trial.get(s.key, 0)) for s in self.sites})
        try:
            cost = estimate_cost(candidate, self.dtype, self.path)
        except CostError as exc:
            return str(exc)
        self.history.append((self.exponents, self.source, self.cost, dict(self.stopped)))
        self.exponents, self.source, self.cost = trial, candidate, cost
        return None


def _initial_units(sites: list[Site]) -> list[tuple[Site, ...]]:
    units: dict[tuple[str, int], list[Site]] = {}
    for s in sites:
        units.setdefault((s.role, s.value), []).append(s)
    return [tuple(group) for group in units.values()]


def _dims(sites: tuple[Site, ...], exponents: dict[str, int], stopped: dict[str, str], default: str) -> tuple[DimShrink, ...]:
    dims = []
    for s in sites:
        role = "unused" if s.dead else s.role
        if s.dead:
            note = "assigned again later in the file (this value is never used)"
        elif s.role == "geometry":
            note = "geometry (kernel, stride, padding, heads, layers, axes): never scaled"
        elif not s.scalable:
            note = f"below twice its floor ({s.role} >= {FLOORS[s.role]}): never scaled"
        else:
            note = stopped.get(s.key, default)
        dims.append(DimShrink(s.key, role, s.value, halve(s.value, exponents.get(s.key, 0)), note))
    return tuple(dims)
