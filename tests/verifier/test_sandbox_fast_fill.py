"""The native fill that draws the timed calls' input sets (verifier.sandbox.fast_fill): the task's
distributions, a set's values its seed's alone (whichever thread drew it), every random call a stream of
its own, and torch's generator wherever the call is not one the fill stands in for."""

from __future__ import annotations

import math

import pytest
import torch

from verifier.sandbox import fast_fill
from verifier.sandbox.drawing import Drawers, OwnGenerator, timed_set


@pytest.fixture(scope="module")
def fill() -> fast_fill.Fill:
    path, why = fast_fill.library()
    if path is None:
        pytest.skip(f"the fill library cannot be built here: {why}")
    loaded = fast_fill.load(str(path))
    assert loaded is not None, f"{path} was built but does not load"
    return loaded


def _moments(x: torch.Tensor) -> tuple[float, float]:
    x = x.double()
    return float(x.mean()), float(x.std())


def test_normal_and_uniform_fills_have_the_distributions_they_stand_in_for(fill):
    n = 1 << 20
    normal, uniform = torch.empty(n), torch.empty(n)
    fill.fill(normal, True, 11)
    fill.fill(uniform, False, 11)
    mean, std = _moments(normal)
    assert abs(mean) < 5 / math.sqrt(n) and abs(std - 1.0) < 0.005
    for k, share in ((1, 0.6827), (2, 0.9545), (3, 0.9973)):  # the normal's tails, not only its moments
        assert abs(float((normal.abs() < k).double().mean()) - share) < 0.003
    assert float(uniform.min()) >= 0.0 and float(uniform.max()) < 1.0
    mean, std = _moments(uniform)
    assert abs(mean - 0.5) < 0.002 and abs(std - math.sqrt(1 / 12)) < 0.002
    assert torch.histc(uniform, bins=16, min=0.0, max=1.0).min() > n / 16 * 0.97  # no empty or thin bin
    assert not torch.isnan(normal).any() and torch.isfinite(normal).all()


def test_normals_are_paired_in_blocks_of_16_as_torch_pairs_them_and_short_draws_stay_torchs(fill):
    """torch's randn gives elements j and j + 8 of every 16-element block one radius and angles a quarter
    turn apart; so does the fill, so that a timed set is not told from a trial's by its shape. A draw
    of fewer than 16 normals, which torch makes another way, is left to torch."""
    n = 16 * 4096 + 5
    ours = torch.empty(n)
    fill.fill(ours, True, 8)
    theirs = torch.randn(n, generator=torch.Generator().manual_seed(8))
    for x in (ours, theirs):
        blocks = x[: n // 16 * 16].double().view(-1, 16)
        radius2 = blocks[:, :8] ** 2 + blocks[:, 8:] ** 2
        # 1 - u = exp(-r^2 / 2) on torch's 24-bit grid: both draws land on it far more often than chance
        grid = torch.exp(-radius2 / 2) * 2 ** 24
        small = grid < 2 ** 12  # few grid steps, where float32 keeps the grid visible
        near = ((grid - grid.round()).abs() < 0.01)[small].double().mean()
        assert near > 0.9, float(near)
    assert fast_fill.stand_in(fill, torch.randn, (15,), {}, 1) is None
    assert fast_fill.stand_in(fill, torch.randn, (16,), {}, 1) is not None
    assert fast_fill.stand_in(fill, torch.Tensor.normal_, (torch.zeros(3, 5),), {}, 1) is None
    assert fast_fill.stand_in(fill, torch.rand, (3,), {}, 1) is not None  # uniforms have no blocks
    tail = torch.full((40,), float("nan"))
    fill.fill(tail, True, 2)
    assert not torch.isnan(tail).any()  # the last, partial block recomputed over the last 16 elements


def test_a_fill_is_its_seeds_and_seeds_differ(fill):
    a, b, c = torch.empty(1001), torch.empty(1001), torch.empty(1001)
    fill.fill(a, True, 3)
    fill.fill(b, True, 3)
    fill.fill(c, True, 4)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert len(set(a.tolist())) > 990  # odd lengths are filled to the last element
    streams = {fast_fill.call_seed(5, k) for k in range(1, 1000)} | {fast_fill.call_seed(6, 1)}
    assert len(streams) == 1000


def _get_inputs():
    return [torch.randn(64, 33), torch.empty(17).uniform_(-2.0, 2.0), torch.randint(0, 10, (5,)),
            torch.rand(8, 8, dtype=torch.float16), torch.randn(4, dtype=torch.float64), torch.empty(9).normal_(3.0, 0.5)]


def test_a_timed_set_drawn_with_the_fill_is_its_seeds_on_any_thread_and_leaves_the_global_generator(fill):
    alone = [timed_set(_get_inputs, seed, fill) for seed in range(6)]
    torch.manual_seed(1234)
    state = torch.random.get_rng_state()
    drawers = Drawers()
    try:
        _, timed = drawers.draw([], [lambda s=s: timed_set(_get_inputs, s, fill) for s in range(6)])
    finally:
        drawers.pool.shutdown()
    for a, b in zip(alone, timed):
        assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert torch.equal(torch.random.get_rng_state(), state)
    x, y, idx, half, double, shifted = alone[0]
    assert not torch.equal(x, alone[1][0])  # a fresh set per seed
    assert not torch.equal(x.flatten()[:17], y)  # every random call its own stream
    assert float(y.min()) >= -2.0 and float(y.max()) < 2.0 and half.dtype == torch.float16
    assert double.dtype == torch.float64 and idx.dtype == torch.int64
    # the calls it does not stand in for drew from the set's own generator, in order, and only they did
    own = torch.Generator().manual_seed(0)
    assert torch.equal(idx, torch.randint(0, 10, (5,), generator=own))
    assert torch.equal(half, torch.rand(8, 8, dtype=torch.float16, generator=own))
    assert torch.equal(double, torch.randn(4, dtype=torch.float64, generator=own))
    assert torch.equal(shifted, torch.empty(9).normal_(3.0, 0.5, generator=own))  # 9 normals: torch's way
    assert not torch.equal(x, timed_set(_get_inputs, 0)[0])  # randn itself is the fill's


def test_what_the_fill_stands_in_for_and_what_it_leaves_to_torch(fill):
    seed = 99
    stood = fast_fill.stand_in
    assert stood(fill, torch.randn, (4, 8), {}, seed).shape == (4, 8)
    assert stood(fill, torch.rand, ((4,),), {"dtype": torch.float32}, seed).dtype == torch.float32
    assert stood(fill, torch.randn, (torch.Size([4, 4]),), {"requires_grad": True}, seed).requires_grad
    assert stood(fill, torch.randn_like, (torch.zeros(3, 6),), {}, seed).shape == (3, 6)
    t = torch.zeros(6)
    assert stood(fill, torch.Tensor.uniform_, (t, 5.0, 6.0), {}, seed) is t and float(t.min()) >= 5.0
    # left to torch: float64, integers, out=, a non-contiguous template, a device, a generator's own calls
    assert stood(fill, torch.randn, (3,), {"dtype": torch.float64}, seed) is None
    assert stood(fill, torch.rand, (64,), {"dtype": torch.float16}, seed) is None  # torch's half grid never reaches 1
    assert stood(fill, torch.randn, (64,), {"dtype": torch.bfloat16}, seed) is None
    assert stood(fill, torch.Tensor.uniform_, (torch.zeros(64, dtype=torch.float16),), {}, seed) is None
    assert stood(fill, torch.randint, (0, 5, (3,)), {}, seed) is None
    assert stood(fill, torch.randn, (3,), {"out": torch.empty(3)}, seed) is None
    assert stood(fill, torch.rand_like, (torch.zeros(4, 4).t()[:, :2],), {}, seed) is None
    assert stood(fill, torch.randn, (3,), {"device": "meta"}, seed) is None
    assert stood(fill, torch.randn, (3.5,), {}, seed) is None
    assert stood(fill, torch.Tensor.normal_, (torch.zeros(4, dtype=torch.float64),), {}, seed) is None
    with OwnGenerator(torch.Generator().manual_seed(9), fill):  # an explicit generator is still kept
        drawn = torch.randn(4, generator=torch.Generator().manual_seed(5))
    assert torch.equal(drawn, torch.randn(4, generator=torch.Generator().manual_seed(5)))


def test_loading_the_library_leaves_the_process_s_subnormals(fill):
    """Built with -ffast-math, once linked with it too: GCC's crtfastmath.o turned on flush-to-zero in every
    process that loaded the fill (the reference worker's outputs, a test worker's later hypothesis floats)."""
    import subprocess
    import sys

    path, _why = fast_fill.library()
    probe = ("import ctypes, sys, torch; before = float(torch.tensor([1e-40]) * 1.0); ctypes.CDLL(sys.argv[1]);"
             "after = float(torch.tensor([1e-40]) * 1.0); print(before != 0.0, after != 0.0)")
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True"], out.stderr


def test_an_unloadable_library_leaves_torchs_generator():
    assert fast_fill.load("") is None
    assert fast_fill.load("/nonexistent/fill.so") is None


def test_without_a_compiler_or_when_turned_off_there_is_no_library(monkeypatch, tmp_path):
    monkeypatch.setenv(fast_fill.OFF_ENV, "1")
    assert fast_fill.library() == (None, f"{fast_fill.OFF_ENV} is set")
    monkeypatch.setattr(fast_fill.shutil, "which", lambda name: None)
    assert fast_fill._library(tmp_path / "fresh") == (None, "no C compiler on PATH")
    assert not (tmp_path / "fresh").exists()



def test_the_facts_say_why_the_timed_inputs_were_not_drawn_by_the_fill():
    from verifier.sandbox.fast_fill import drawn_with

    assert drawn_with("native fill", "") == "native fill"
    assert drawn_with("torch's generator", "no C compiler on PATH") == "torch's generator (no C compiler on PATH)"
    assert drawn_with("torch's generator", "") == "torch's generator (the native fill library could not be loaded)"
