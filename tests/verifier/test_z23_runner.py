"""Issue 23, bad input of the runner (tests/verifier/z23_runner_cases.py): a process that dies at each
phase, hangs, floods its result channel or answers garbage fails the gate of its phase with a
one-line reason; the verification returns (the caller survives, with its memory bounded while it
reads the channel) and every stored file keeps its bytes and metadata. Static checks off.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

import pytest
from escape_world import Targets, tree_state
from verdict_pool import VerdictPool
from verifier_taskutil import fixture_task
from z23_runner_cases import CASES, RunnerCase

from verifier.api import verify
from verifier.gates.hack_native import NATIVE_CHECKS
from verifier.gates.hack_python import CHECKS
from verifier.sandbox import seccomp
from verifier.settings import VerifySettings

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="the sandbox's seccomp filter is x86_64 Linux only")
ALL_STATIC = tuple(CHECKS) + tuple(NATIVE_CHECKS) + ("c_undefined_symbols",)
MARGIN_S = 90.0  # start-up and compile on a loaded machine, beyond the run-time budget
CALLER_MEMORY_MB = 256  # how much a hostile runner may make the caller hold while reading its channel
BY_NAME = {c.name: c for c in CASES}


@contextmanager
def peak_rss_growth():
    """Yields a list that holds, afterwards, the caller's peak resident-memory growth in MiB."""
    page = os.sysconf("SC_PAGE_SIZE")
    rss = lambda: int(open("/proc/self/statm").read().split()[1]) * page  # noqa: E731
    base, peak, done = rss(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss() - base)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    result: list[float] = []
    try:
        yield result
    finally:
        done.set()
        sampler.join()
        result.append(peak[0] / 2**20)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("z23-runner")
    targets = Targets.create(base / "stored", "runner", 0)
    return base, targets, tree_state([targets.root])


def _verify(case: RunnerCase, cache) -> tuple:
    settings = VerifySettings.for_tests(cache, seed=31, disabled_checks=ALL_STATIC, timeout_s=case.timeout_s)
    start = time.monotonic()
    with peak_rss_growth() as grown:
        verdict = verify(fixture_task("relu"), case.source, "cpu", settings)
    return verdict, time.monotonic() - start, grown[0]


@pytest.fixture(scope="module")
def verdicts(verify_cache):
    # the memory bound needs the caller to itself: the channel-abuse cases run one at a time
    pool = VerdictPool([c.name for c in CASES if not c.also], lambda name: _verify(BY_NAME[name], verify_cache))
    yield pool
    pool.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_misbehaving_runner_fails_its_own_gate_with_one_line(case: RunnerCase, verdicts, verify_cache, world):
    verdict, seconds, grown_mb = verdicts.get(case.name) if not case.also else _verify(case, verify_cache)
    assert not verdict.infrastructure_error, f"{case.covers}: infrastructure error {verdict.infrastructure_error}"
    assert not verdict.passed, verdict.feedback
    assert verdict.failed_gate in (case.gate, *case.also), f"{case.covers}: expected {case.gate}\n{verdict.feedback}"
    reason = verdict.gate(verdict.failed_gate).reason
    assert reason and "\n" not in reason and len(reason) <= 300, repr(reason)
    assert seconds < case.timeout_s + MARGIN_S, f"the verification took {seconds:.0f} s"
    assert grown_mb < CALLER_MEMORY_MB or not case.also, (
        f"{case.covers}: the caller grew by {grown_mb:.0f} MiB reading the runner's channel")
    _base, targets, before = world
    assert tree_state([targets.root]) == before
