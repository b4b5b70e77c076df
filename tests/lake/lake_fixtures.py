"""Fixtures for memory_lake tests: real lakes in temp dirs."""

from __future__ import annotations

import pytest

from memory_lake import Lake, NewItem, SeedItemRow

SEEDS = (
    SeedItemRow("cpu backend API notes", "Use OpenMP parallel for loops; mark pointers restrict.", "", "general"),
    SeedItemRow("cpu worked example: relu", "An elementwise relu kernel in C.",
                "for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0;", "activation"),
)


def sample_items(count: int, backend: str = "cpu") -> list[NewItem]:
    cats = ("activation", "matmul", "reduction", "conv")
    return [NewItem(kind=("experience", "trace", "best_practice")[i % 3], backend=backend,
                    title=f"{cats[i % 4]} note {i}", body=f"{cats[i % 4]} kernel: tile size {16 * (i % 5 + 1)} "
                    f"vectorize inner loop {i}", task_id=f"L1_{i % 7}", category=cats[i % 4]) for i in range(count)]


@pytest.fixture
def lake(tmp_path) -> Lake:
    with Lake.create(tmp_path / "lake", "cpu", SEEDS) as created:
        yield created
