"""Issue 23, class 4: candidates that reach the harness in their own process and change what the
latency gate measures (tests/verifier/z23_harness_hacks.py), with every static check off.

The kernel they share is an honest serial ReLU, slower than torch's (the last test measures it
alone: well below ``FAKE_BAR``). Each attack inflates the reported speedup about twentyfold, so a
verdict that passes with a speedup at or above the bar passed on the attack. A contained attack
either fails a gate or changes nothing, and then the kernel measures what it is: below the bar.
"""

from __future__ import annotations

import pytest
from verdict_pool import VerdictPool
from verifier_taskutil import fixture_task
from z23_harness_hacks import HACKS, HONEST_SERIAL, HarnessHack

from verifier.api import verify
from verifier.gates.hack_native import NATIVE_CHECKS
from verifier.gates.hack_python import CHECKS
from verifier.result import Verdict
from verifier.sandbox import seccomp
from verifier.settings import VerifySettings

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="the sandbox's seccomp filter is x86_64 Linux only")
ALL_STATIC = tuple(CHECKS) + tuple(NATIVE_CHECKS) + ("c_undefined_symbols",)
FAKE_BAR = 2.0  # the honest serial kernel measures ~0.2-0.5x here; each attack multiplies that by ~20
SOURCES = {h.name: h.source for h in HACKS} | {"honest_serial": HONEST_SERIAL}


@pytest.fixture(scope="module")
def verdicts(verify_cache):
    def one(name: str) -> Verdict:
        settings = VerifySettings.for_tests(verify_cache, seed=2323, disabled_checks=ALL_STATIC)
        return verify(fixture_task("relu"), SOURCES[name], "cpu", settings)

    pool = VerdictPool(list(SOURCES), one)
    yield pool
    pool.close()


def speedup(verdict: Verdict) -> float | None:
    return verdict.latency.speedup if verdict.passed and verdict.latency is not None else None


@pytest.mark.parametrize("hack", HACKS, ids=lambda h: h.name)
def test_a_harness_attack_never_passes_with_a_fake_speedup(hack: HarnessHack, verdicts):
    verdict = verdicts.get(hack.name)
    assert not verdict.infrastructure_error, verdict.infrastructure_error
    measured = speedup(verdict)
    assert measured is None or measured < FAKE_BAR, (
        f"{hack.name} ({hack.route}: {hack.payload}) passed with a {measured:.1f}x speedup\n{verdict.feedback}")


def test_the_honest_kernel_they_share_measures_below_the_bar(verdicts):
    verdict = verdicts.get("honest_serial")
    assert verdict.passed, verdict.feedback
    assert speedup(verdict) < FAKE_BAR, verdict.feedback
