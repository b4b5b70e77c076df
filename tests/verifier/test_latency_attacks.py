"""The latency-phase attacks of tests/verifier/latency_attack_cases.py through the real verifier, with the timing
plan a verification runs (16 rounds that may end early after 8, 40 ms windows, a warm-up, retimes), each next to
the honest kernel it is compared with, verified the same way on the same task.

An attack gains nothing when its verdict is refused at the hack gate for what was seen (the case names the
texts), or its latency is not trusted (the machine's outcome, or a cost that kept rising through the rounds:
either earns no reward; a case that expects it names the reason's text), or its speedup is at most
its case's ``gain_limit`` times the honest kernel's (1.05 unless the case says why), judged by the lower end of its confidence interval (two verifications' noise
on a loaded machine is not a gain), and a gain must show again on a fresh pair of verifications. Every output of every case is correct: any other failing gate means the case
itself is broken. Verifications run one at a time (two at once would share the two cores the timing compares on).
"""

from __future__ import annotations

from functools import lru_cache

import pytest
from latency_attack_cases import CASES, LatencyAttack
from verifier_taskutil import FIXTURES, fixture_task

from verifier.api import verify
from verifier.result import Verdict
from verifier.sandbox import seccomp
from verifier.settings import VerifySettings

SEED = 20261129  # fixed: every run meets the same inputs, order and placement of the audited and observed rounds

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="the sandbox's seccomp filter is x86_64 Linux only")


def _settings(cache, case: LatencyAttack, disable: str = "") -> VerifySettings:
    return VerifySettings.for_tests(cache, seed=SEED, timeout_s=120.0, **case.timing,
                                    disabled_checks=tuple(x for x in disable.split(",") if x))


def _honest_source(case: LatencyAttack) -> str:
    return (FIXTURES / case.honest).read_text() if case.honest.endswith(".py") and "\n" not in case.honest \
        else case.honest


@lru_cache(maxsize=None)
def _honest_verdict(cache, task: str, source: str, timing: tuple) -> Verdict:
    settings = VerifySettings.for_tests(cache, seed=SEED, timeout_s=120.0, **dict(timing))
    return verify(fixture_task(task), source, "cpu", settings)


def _param(case: LatencyAttack):
    marks = [pytest.mark.xfail(strict=True, reason=case.pending)] if case.pending else []
    return pytest.param(case, id=case.name, marks=marks)


def gained(verdict: Verdict, honest: Verdict, case: LatencyAttack) -> str:
    """"" when the attack gained nothing; else what it gained (a failing gate the case never meant is an error)."""
    assert not verdict.infrastructure_error, verdict.infrastructure_error
    if case.stopped_at and verdict.failed_gate == case.stopped_at[0]:
        reason = verdict.gate(case.stopped_at[0]).reason
        assert case.stopped_at[1] in reason, f"stopped at {case.stopped_at[0]} for something else: {reason}"
        return ""
    if verdict.failed_gate == "hack" and case.refusals:
        reason = verdict.gate("hack").reason
        assert any(text in reason for text in case.refusals), f"refused for something else: {reason}"
        return ""
    assert verdict.passed, f"the case computes correctly and must reach the latency figure: {verdict.feedback}"
    if not verdict.latency.trusted:  # no reward: the machine's outcome, or a cost with no steady speed
        return ""
    limit = honest.latency.speedup * case.gain_limit
    if verdict.latency.ci_low <= limit:  # a gain is one beyond the figure's own spread: under load (a CI run,
        return ""  # load 7) a case equal to its honest kernel read 0.282x [0.258-0.412] against its 0.263x
    return (f"{verdict.latency.speedup:.2f}x [{verdict.latency.ci_low:.2f}-{verdict.latency.ci_high:.2f}] over "
            f"{verdict.latency.rounds} rounds ({verdict.latency.rounds_retimed} retimed, "
            f"{verdict.latency.calls_per_window} calls a window, candidate {verdict.latency.candidate_ms:.3f} ms, "
            f"reference {verdict.latency.reference_ms:.3f} ms) against the honest kernel's "
            f"{honest.latency.speedup:.2f}x (limit {limit:.2f}x)")


def _figure(verdict: Verdict) -> str:
    if not verdict.passed:
        return f"failed at {verdict.failed_gate}"
    lat = verdict.latency
    return (f"{lat.speedup:.3f}x [{lat.ci_low:.3f}-{lat.ci_high:.3f}], {lat.rounds} rounds ({lat.rounds_retimed} retimed), "
            f"{lat.calls_per_window} calls a window, candidate {lat.candidate_ms:.3f} ms, reference {lat.reference_ms:.3f} ms"
            + ("" if lat.trusted else ", not trusted") + (f", flagged: {lat.flag_reason}" if lat.flagged else ""))


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_a_latency_attack_gains_nothing_over_the_honest_kernel(case: LatencyAttack, verify_cache):
    honest = _honest_verdict(verify_cache, case.task, _honest_source(case), tuple(sorted(case.timing.items())))
    assert honest.passed, f"the honest kernel must pass: {honest.feedback}"
    if not honest.latency.trusted:
        pytest.skip(f"the machine was too busy to compare speeds: {honest.latency.untrusted_reason}")
    verdict = verify(fixture_task(case.task), case.source, "cpu", _settings(verify_cache, case, case.disable))
    if (case.pending or case.untrusted) and verdict.passed and not verdict.latency.trusted \
            and not any(text in verdict.latency.untrusted_reason for text in case.untrusted):
        pytest.skip(f"the machine was too busy to show the known gain: {verdict.latency.untrusted_reason}")
    print(f"{case.name}: {_figure(verdict)}; honest: {_figure(honest)}")
    problem = gained(verdict, honest, case)
    if problem:  # one pair of verifications minutes apart on a loaded machine can differ by more than the limit
        # (a CI run, 2026-11-30: the honest kernel 0.15x against 0.18-0.20x quiet, the case 0.20x with 20 rounds
        # retimed; quiet, both read 0.18-0.20x on either side of the change then tested): a gain must show again,
        # on a fresh pair verified back to back
        honest = verify(fixture_task(case.task), _honest_source(case), "cpu", _settings(verify_cache, case))
        verdict = verify(fixture_task(case.task), case.source, "cpu", _settings(verify_cache, case, case.disable))
        print(f"again: {_figure(verdict)}; honest: {_figure(honest)}")
        again = gained(verdict, honest, case) if honest.passed and honest.latency.trusted else ""
        problem = f"{problem}; again: {again}" if again else ""
    assert not problem, f"{case.name} reads faster than the honest kernel: {problem}"


def test_every_case_names_its_honest_kernel():
    for case in CASES:
        source = _honest_source(case)
        assert "class ModelNew" in source and source != case.source, case.name
