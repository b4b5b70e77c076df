"""The feedback a model reads about a passing kernel (issue 35): the speedup next to its definition
and the times it came from, consistent with them or saying why not; a unit on every figure; flags
told as what they mean, with no advice the model cannot act on (the verifier's flag text asks a
human to rerun or review)."""

from __future__ import annotations

import re

from verifier.feedback import flag_line, latency_lines
from verifier.result import LatencyResult
from verifier.roofline import MachinePeaks, Workload, position

NOISY = "noisy timing (IQR/median candidate 28%, reference 101%): a loaded machine; rerun before trusting the speedup"
IMPLAUSIBLE = ("implausible by roofline: 0.01 ms is faster than this machine's measured peaks allow for 8 MB and "
               "2e+06 FLOPs (at least 0.3 ms; 3000% of the roof): review before trusting")


def test_the_speedup_says_what_it_is_and_why_it_is_not_the_ratio_of_the_times():
    """The issue's line: "candidate 1.765 ms, reference 2.592 ms, speedup 1.25x" (the times give 1.47x)."""
    lat = LatencyResult(candidate_ms=1.765, reference_ms=2.592, speedup=1.25, ci_low=1.05, ci_high=1.48, rounds=30)
    (line,) = latency_lines(lat)
    assert line.startswith("latency: speedup 1.25x over the reference (95% CI 1.05-1.48) = the median over 30 rounds "
                           "of reference time / candidate time, both timed in each round; median times: candidate "
                           "1.765 ms, reference 2.592 ms")
    assert "their ratio, 1.47x, differs from the speedup" in line


def test_consistent_figures_need_no_explanation():
    lat = LatencyResult(candidate_ms=1.0, reference_ms=2.0, speedup=2.01, ci_low=1.9, ci_high=2.1, rounds=30)
    assert "differs" not in latency_lines(lat)[0]


def test_flags_say_what_they_mean_without_advice_the_model_cannot_follow():
    noisy, implausible = flag_line(NOISY), flag_line(IMPLAUSIBLE)
    for text in (noisy, implausible):
        assert not re.search(r"\brerun\b|review before", text), text
    assert noisy.startswith("flag: noisy timing (IQR/median candidate 28%, reference 101%)")
    assert "this speedup is uncertain" in noisy and "not a verdict on your kernel" in noisy
    assert "does not count as the task's best" in implausible


def test_every_roofline_figure_has_its_unit():
    peaks = MachinePeaks(backend="cpu", device="test", threads=2, bandwidth=((1_000, 958.0), (10**9, 29.8)),
                         compute_gflops=200.0)
    roof = position(Workload(bytes_moved=30_800, flops=3_600), seconds=0.834e-3, peaks=peaks)
    line = roof.line()
    assert "0.0369 GB/s of 958 GB/s from cache" in line and "reaches 0.0039% of" in line  # was "0.0369 of 958", "0%"
    numbers = re.findall(r"(\d[\d.e+-]*)( ?[A-Za-z/%]+)?", line.split(";", 1)[1])
    assert all(unit for _number, unit in numbers), numbers
