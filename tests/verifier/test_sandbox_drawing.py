"""Timed input sets drawn on two threads: each set's values are its own seed's, whichever thread drew it,
the global generator (the trial plan's audits) is left alone, and a task's random calls all go through
the set's generator."""

from __future__ import annotations

import torch

from verifier.sandbox.drawing import Drawers, OwnGenerator, timed_set


def _get_inputs():
    x = torch.randn(64, 33)
    y = torch.empty(17).uniform_(-2.0, 2.0)
    idx = torch.randint(0, 10, (5,))
    return [x, y, idx, torch.rand_like(x)]


def test_a_timed_set_is_its_seeds_whichever_thread_draws_it_and_the_global_generator_is_left_alone():
    alone = [timed_set(_get_inputs, seed) for seed in range(6)]
    torch.manual_seed(1234)
    state = torch.random.get_rng_state()
    drawers = Drawers()
    try:
        trials, timed = drawers.draw([lambda: torch.randn(3)], [lambda s=s: timed_set(_get_inputs, s) for s in range(6)])
    finally:
        drawers.pool.shutdown()
    torch.manual_seed(1234)
    assert torch.equal(trials[0], torch.randn(3))  # the plan's set drawn from the global generator, as before
    for a, b in zip(alone, timed):
        assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert not torch.equal(alone[0][0], alone[1][0])  # a fresh set per seed
    torch.manual_seed(1234)
    timed_set(_get_inputs, 7)
    assert torch.equal(torch.random.get_rng_state(), state)  # timed draws took nothing from it


def test_an_explicit_generator_is_kept():
    mine = torch.Generator().manual_seed(5)
    with OwnGenerator(torch.Generator().manual_seed(9)):
        drawn = torch.randn(4, generator=mine)
    assert torch.equal(drawn, torch.randn(4, generator=torch.Generator().manual_seed(5)))
