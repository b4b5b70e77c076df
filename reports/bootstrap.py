"""Bootstrap confidence intervals over units (tasks, seeds): the mean of a metric and the mean of a
paired difference, percentile intervals from a seeded resampling (the same data give the same CI).

Units, not attempts, are resampled: attempts of one task are not independent, tasks are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

RESAMPLES = 4000


@dataclass(frozen=True)
class Interval:
    mean: float | None  # None: no unit had a value
    low: float | None
    high: float | None
    n: int  # units with a value

    def text(self, fmt: str = "{:.2f}") -> str:
        if self.mean is None:
            return "–"
        if self.low is None or self.n < 2:
            return fmt.format(self.mean) + f" (n={self.n})"
        return f"{fmt.format(self.mean)} [{fmt.format(self.low)}, {fmt.format(self.high)}]"


def mean_ci(values: Sequence[float | None], level: float = 0.95, resamples: int = RESAMPLES,
            seed: int = 0) -> Interval:
    """The mean over units with a value (None and NaN left out) and its percentile bootstrap CI."""
    data = np.array([v for v in values if v is not None and not np.isnan(v)], dtype=float)
    if data.size == 0:
        return Interval(None, None, None, 0)
    if data.size == 1:
        return Interval(float(data[0]), None, None, 1)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(data.mean()), float(low), float(high), int(data.size))


def paired_diff_ci(a: Sequence[float | None], b: Sequence[float | None], level: float = 0.95,
                   resamples: int = RESAMPLES, seed: int = 0) -> Interval:
    """The mean of a - b over the units where both have a value, with its bootstrap CI."""
    diffs = [x - y for x, y in zip(a, b) if x is not None and y is not None and not np.isnan(x) and not np.isnan(y)]
    return mean_ci(diffs, level, resamples, seed)


def ratio_ci(numerators: Sequence[float], denominators: Sequence[float], level: float = 0.95,
             resamples: int = RESAMPLES, seed: int = 0) -> Interval:
    """sum(numerators) / sum(denominators) over units (e.g. tokens per correct kernel over tasks),
    with a bootstrap CI resampling units; None where the denominators sum to 0."""
    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if num.size == 0 or den.sum() <= 0:
        return Interval(None, None, None, int(num.size))
    value = float(num.sum() / den.sum())
    if num.size == 1:
        return Interval(value, None, None, 1)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, num.size, size=(resamples, num.size))
    sums = den[picks].sum(axis=1)
    ratios = num[picks].sum(axis=1)[sums > 0] / sums[sums > 0]
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail]) if ratios.size else (None, None)
    return Interval(value, None if low is None else float(low), None if high is None else float(high), int(num.size))
