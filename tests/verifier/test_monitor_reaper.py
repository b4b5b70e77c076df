"""A finished verification's arenas are closed off the verdict's path (verifier.monitor.reaper): on a thread of
their own, every closer run whatever another raises, and a latency phase waits for them before its first window."""

from __future__ import annotations

import os
import threading
import time

import pytest
from verifier_taskutil import FIXTURES, TASKS, make_task

from verifier.monitor import timing
from verifier.monitor.reaper import REAPER, Reaper


def test_closers_run_on_their_own_thread_and_drain_waits_for_them():
    reaper, release, ran = Reaper(), threading.Event(), []

    def slow() -> None:
        release.wait(10)
        ran.append(threading.current_thread().name)

    def broken() -> None:
        raise OSError("already closed")

    reaper.later([slow, broken, lambda: ran.append("after a failure")])
    assert reaper.pending() == 1 and ran == []  # the caller went on while the closers wait
    threading.Timer(0.2, release.set).start()
    started = time.perf_counter()
    reaper.drain()
    assert time.perf_counter() - started >= 0.15
    assert ran == ["evokernel-reaper", "after a failure"] and reaper.pending() == 0
    reaper.drain()  # nothing pending: returns at once


def test_a_latency_phase_waits_for_the_closes_before_its_first_window(monkeypatch):
    order = []

    class Waiting:
        def drain(self) -> None:
            order.append("drained")

    class NoBoost:
        def __init__(self) -> None:
            order.append("timing began")
            raise RuntimeError("stop here")

    monkeypatch.setattr(timing, "REAPER", Waiting())
    monkeypatch.setattr(timing, "Boost", NoBoost)
    plan = timing.TimingPlan(5, 2.0, 16, 0, 0, 500, 50.0)
    with pytest.raises(RuntimeError, match="stop here"):
        timing.measure([], None, [], plan, None, 0, False, 1.0, [])
    assert order == ["drained", "timing began"]


def _arena_fds() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "evokernel-arena" in target:
            found.append(target)
    return found


def test_a_verification_leaves_no_arena_open_once_its_closes_are_drained(tmp_path, verify_cache):
    from verifier.api import verify
    from verifier.settings import VerifySettings

    REAPER.drain()
    before = len(_arena_fds())
    task = make_task((TASKS / "relu.py").read_text(), "fixture/relu", tmp_path)
    verdict = verify(task, (FIXTURES / "honest_relu_omp.py").read_text(), "cpu", VerifySettings.for_tests(verify_cache))
    assert verdict.passed, verdict.feedback
    REAPER.drain()
    assert len(_arena_fds()) == before, _arena_fds()


def test_a_drain_concurrent_with_later_never_joins_a_thread_before_it_started():
    """Verifications run side by side (a verdict pool, a campaign's parallel tasks): one's drain() took the
    thread another's later() had just listed and not yet started, and join() raised (a CI run, 2026-11-30)."""
    reaper, errors = Reaper(), []

    def work(drains: bool) -> None:
        try:
            for _ in range(400):
                reaper.drain() if drains else reaper.later([lambda: None])
        except RuntimeError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reaper.drain()
    assert errors == [] and reaper.pending() == 0
