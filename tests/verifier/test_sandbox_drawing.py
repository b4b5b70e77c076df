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


def _placed_set(get_inputs, seed: int, slots_on: bool):
    """A timed set drawn with the native fill into a fresh arena at offset 4096 as the reference worker places
    it (into the arena's own places where ``slots_on``); the arena, and what each placed tensor reads there."""
    import pytest

    from verifier.sandbox import fast_fill, values as wire
    from verifier.sandbox.drawing import ArenaSlots, place
    from verifier.sandbox.torch_values import _view as view
    from verifier.sandbox.values import Shaped

    path, why = fast_fill.library()
    fill = fast_fill.load(str(path)) if path else None
    if fill is None:
        pytest.skip(f"the native fill cannot be built here: {why}")
    base = torch.zeros(1 << 22, dtype=torch.uint8)
    slots = ArenaSlots(base, 4096, 1 << 21) if slots_on else None
    drawn = timed_set(get_inputs, seed, fill, slots)
    shaped = [Shaped(tuple(x.shape), "float32" if x.dtype == torch.float32 else "int64", x) for x in drawn]
    _, placed, _ = wire.layout_spec(shaped, 4096)
    place(base, placed, view)
    return base, [view(base, layout) for layout, _ in placed], drawn


def test_a_set_drawn_into_the_arena_needs_no_copy_and_reads_as_one_drawn_apart():
    def as_drawn():
        return [torch.randn(300, 257), torch.rand(1000), torch.randint(0, 9, (7,))]

    _, apart, _ = _placed_set(as_drawn, 11, slots_on=False)
    base, inside, drawn = _placed_set(as_drawn, 11, slots_on=True)
    for x, y in zip(apart, inside):
        assert torch.equal(x, y)
    assert drawn[0].data_ptr() == inside[0].data_ptr() and drawn[1].data_ptr() == inside[1].data_ptr()  # filled there
    assert drawn[2].data_ptr() != inside[2].data_ptr()  # torch's randint: a tensor of its own, copied


def test_a_set_returned_in_another_order_or_computed_from_its_draws_is_placed_whole():
    def reordered():
        a, b = torch.randn(4096), torch.randn(4096)
        return [b, a * 2.0, a]

    _, apart, _ = _placed_set(reordered, 3, slots_on=False)
    _, inside, _ = _placed_set(reordered, 3, slots_on=True)
    for x, y in zip(apart, inside):
        assert torch.equal(x, y)
    assert torch.equal(inside[1], inside[2] * 2.0)


def test_draws_beyond_the_sets_room_get_tensors_of_their_own():
    from verifier.sandbox.drawing import ArenaSlots

    slots = ArenaSlots(torch.zeros(1 << 22, dtype=torch.uint8), 4096, 4096 + (1 << 20))
    assert slots((64,)) is not None
    assert slots((1 << 19,)) is None  # 2 MiB: more than the 1 MiB of room
    assert slots((16,)) is None  # and nothing after it either
