"""Inputs for correctness and timing, generated in the reference worker from (secret seed, trial
index): the task's own ``get_inputs()`` fixes shapes and
non-float inputs, float tensors take the task's dtype and are redrawn from the trial's
distribution. Models and inputs are built by :mod:`kernelbench_npu.instantiate`, the
distributions come from :mod:`kernelbench_npu.distributions` (the task lint uses both too).

The plan: ``correctness_trials`` trials cycling through DISTRIBUTIONS, one in-place perturbation
probe of trial 0 (same storage, new values: output replay must fail), POST_TIMING_TRIALS
trials the child computes only after timing (outputs re-checked after the timed loop), and two
audit trials the monitor plants at secret positions among the timed calls: fresh inputs drawn like
every timed call's (the task's own distribution), then a near-duplicate of them (a few elements take
other elements' values, so the input stays in the task's distribution and a cache keyed on sampled
values returns a stale output). Reference-worker side only (imports torch).
"""

from __future__ import annotations

import copy
import types
from dataclasses import dataclass

import torch

from kernelbench_npu import instantiate
from kernelbench_npu.distributions import DISTRIBUTIONS, redraw
from verifier.sandbox.inputs_plan import POST_TIMING_TRIALS, TIMED, Trial, plan  # noqa: F401 - re-exported
from verifier.seeds import derive_seed

PERTURB_FRACTION = 0.05
NEAR_DUPLICATE_FRACTION = 0.001  # of the first float input's elements, at least one
KEPT_INPUT_BYTES = 768 << 20  # trial draws the reference worker keeps (TrialInputs), within its 6 GiB address space


@dataclass(frozen=True)
class Problem:
    """The task's problem file, executed once, and the dtype the task runs in."""

    module: types.ModuleType
    dtype: str

    @property
    def Model(self) -> type:  # noqa: N802 - the problem file's name
        return self.module.Model


def load_problem(source: str, dtype: str = "float32") -> Problem:
    return Problem(instantiate.load_module(source, "problem.py"), dtype)


def build_models(problem: Problem, model_classes: list[type], init_seed: int) -> list[torch.nn.Module]:
    """Each model built from the same seed and the same init inputs, in eval mode, in the task's dtype."""
    return instantiate.build_models(problem.module, model_classes, problem.dtype, init_seed)


def init_values(problem: Problem, init_seed: int) -> list:
    """``get_init_inputs()`` as :func:`build_models` passes them (drawn under the init seed, floats cast)."""
    instantiate.seed_all(init_seed)
    return [instantiate.cast(x, problem.dtype) for x in problem.module.get_init_inputs()]


def make_inputs(problem: Problem, seed: int, trial: Trial, fill=None) -> list:
    """A trial's draw: the task's ``get_inputs()`` under the trial's seed, float tensors then redrawn from the
    trial's distribution. With ``fill`` (verifier.sandbox.fast_fill's library) the task's random calls and the
    redraw's normals come from it where it stands in for them, as a timed set's do (three times faster than
    torch's generator; the draws are the same distributions, the values the fill's own)."""
    input_seed, redraw_seed = derive_seed(seed, "inputs", trial.index), derive_seed(seed, "redraw", trial.index)
    gen = torch.Generator().manual_seed(redraw_seed)
    if fill is None:
        raw = instantiate.make_inputs(problem.module, problem.dtype, input_seed)
        return [redraw(x, trial.distribution, gen) for x in raw]
    from verifier.sandbox.drawing import timed_set
    from verifier.sandbox.fast_fill import normals

    instantiate.seed_all(input_seed)  # numpy's and Python's generators, which a get_inputs() may use too
    raw = [instantiate.cast(x, problem.dtype) for x in timed_set(problem.module.get_inputs, input_seed, fill)]
    normal = normals(fill, redraw_seed)
    return [redraw(x, trial.distribution, gen, normal) for x in raw]


def timed_inputs(problem: Problem, seed: int, index: int, fill=None, slots=None) -> list:
    """A timed call's inputs: the task's own ``get_inputs()``, its random calls drawing from a generator
    of their own seeded from (``seed``, ``index``) (verifier.sandbox.drawing: sets drawn on two threads
    at once; ``fill``: verifier.sandbox.fast_fill's library, where loaded, filling into ``slots`` where
    given), floats cast to the task's dtype."""
    from verifier.sandbox.drawing import timed_set

    return [instantiate.cast(x, problem.dtype)
            for x in timed_set(problem.module.get_inputs, derive_seed(seed, "inputs", index), fill, slots)]


def perturb_in_place(inputs: list, seed: int, fraction: float = PERTURB_FRACTION, tag: str = "perturb") -> None:
    """Change ``fraction`` (at least one) of the first float input's elements in place (same
    storage, new content)."""
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 0:
            gen = torch.Generator().manual_seed(derive_seed(seed, tag))
            count = max(1, int(x.numel() * fraction))
            # positions drawn with replacement: a permutation of every element costs ~1 s for a 8M-element
            # input and a repeated position only means slightly fewer distinct elements change
            flat, at = _in_place(x, torch.randint(x.numel(), (count,), generator=gen))
            flat[at] = (-flat[at] * 2.0 + 0.5).to(x.dtype)
            return


def shuffle_some(inputs: list, seed: int, fraction: float, tag: str) -> None:
    """``fraction`` (at least one) of the first float input's elements take the values of other elements
    of it, in place: the input changes where those differ and stays in its distribution (an audited call
    looks like any timed call)."""
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            gen = torch.Generator().manual_seed(derive_seed(seed, tag))
            count = max(1, int(x.numel() * fraction))
            # each position once: a position drawn twice would take one of two values, whichever thread of a
            # parallel index_put wrote last, and the audit's own reference output would not be reproducible
            at = torch.unique(torch.randint(x.numel(), (count,), generator=gen))
            shift = torch.randint(1, x.numel(), (at.numel(),), generator=gen)
            flat, to = _in_place(x, at)
            flat[to] = flat[_in_place(x, (at + shift) % x.numel())[1]].clone()
            return


def _in_place(x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, object]:
    """(a tensor, an index into it) that reach ``positions`` of ``x`` in its row-major order and write to ``x``
    itself: its flat view where it is contiguous, ``x`` and the positions' coordinates where it is not (a
    transposed input has no flat view)."""
    if x.is_contiguous():
        return x.view(-1), positions
    return x, torch.unravel_index(positions, x.shape)


def inputs_for(problem: Problem, seed: int, trial: Trial, fill=None) -> list:
    """The inputs of any trial, perturbation probe included (its base is trial 0)."""
    return TrialInputs(problem, seed, [], budget=0, fill=fill).get(trial)


class TrialInputs:
    """Every trial's inputs (:func:`inputs_for`), each drawn once per verification. The reference worker
    draws a trial's inputs to compute its outputs, and again for the monitor to stage them (a full-size
    8M-element input took ~80 ms a draw here, 10 draws a verification); so the task's draws
    (:func:`make_inputs`, keyed by the trial that seeds them) are kept, within ``budget`` bytes, and
    handed out as copies: bit for bit what drawing again gives, whatever the caller then does to them
    (the reference's forward may work in place; the probes change them). A kept draw is dropped once
    every trial built on it was handed to the monitor (:meth:`served`); the last of them gets the draw
    itself (:meth:`take`)."""

    def __init__(self, problem: Problem, seed: int, trials: list[Trial], budget: int = KEPT_INPUT_BYTES,
                 fill=None) -> None:
        self.problem, self.seed, self.budget, self.fill = problem, seed, budget, fill
        self.kept: dict[int, list] = {}
        self.users = {t.index: {u.index for u in trials if _base(u).index == t.index} for t in trials}

    def get(self, trial: Trial) -> list:
        """``inputs_for(problem, seed, trial)``, from the kept draw where there is one."""
        return self._made(trial, self._drawn(_base(trial)))

    def take(self, trial: Trial) -> list:
        """:meth:`get`, then :meth:`served`: for the monitor's draw of ``trial``'s inputs. Where no other trial
        needs its base draw any more, the kept draw itself is handed over instead of a copy of it (an
        8M-element input's copy took ~40 ms here, most of it fresh pages, on each of a verification's trials)."""
        base = _base(trial).index
        kept = self.kept.pop(base, None) if self.users.get(base, set()) <= {trial.index} else None
        inputs = self.get(trial) if kept is None else self._made(trial, kept)
        self.served(trial)
        return inputs

    def _made(self, trial: Trial, inputs: list) -> list:
        """``trial``'s inputs from its base draw ``inputs`` (changed in place: the probes)."""
        if trial.kind == "perturb":
            perturb_in_place(inputs, self.seed)
        elif trial.distribution == "near-duplicate":
            shuffle_some(inputs, self.seed, NEAR_DUPLICATE_FRACTION, "near-duplicate")
        return inputs

    def served(self, trial: Trial) -> None:
        """``trial``'s inputs were handed to the monitor: its base draw is dropped once no trial needs it."""
        base = _base(trial).index
        self.users.get(base, set()).discard(trial.index)
        if not self.users.get(base):
            self.kept.pop(base, None)

    def _drawn(self, base: Trial) -> list:
        kept = self.kept.get(base.index)
        if kept is not None:
            return copy.deepcopy(kept)  # a memo per call: inputs sharing a storage still share it
        inputs = make_inputs(self.problem, self.seed, base, self.fill)
        if self.users.get(base.index) and _bytes(inputs) <= self.budget - sum(map(_bytes, self.kept.values())):
            self.kept[base.index] = copy.deepcopy(inputs)
        return inputs


def _bytes(value) -> int:
    """The storage bytes of the tensors in ``value`` (lists and tuples followed)."""
    if isinstance(value, torch.Tensor):
        return value.untyped_storage().nbytes()
    return sum(map(_bytes, value)) if isinstance(value, (list, tuple)) else 0


def _base(trial: Trial) -> Trial:
    """The trial whose draw (:func:`make_inputs`) ``trial``'s inputs start from."""
    if trial.kind == "perturb":
        return Trial(0, "check", DISTRIBUTIONS[0])
    if trial.distribution == "near-duplicate":
        return Trial(trial.index - 1, trial.kind, TIMED)
    return trial


def to_numpy(t: torch.Tensor):
    """Outputs travel as numpy: bfloat16 widened to float32 (exact), everything else as is."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.contiguous().numpy()
