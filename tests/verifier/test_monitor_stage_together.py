"""Sides staged for a new layout at once (verifier.monitor.rounds.Rounds._stage_together): the Stage before a
window of a new size (which grows each side's heap) runs on both sides together, each on a CPU of its own,
through the real verifier; a side that dies there fails the verification in one line, the other side
answered for."""

from __future__ import annotations

import os
import signal

from verifier_taskutil import FIXTURES, TASKS, make_task

from verifier.monitor import rounds

BIG_RELU = "rows = 37\ncols = 129"


def _relu_task(tmp_path):
    source = (TASKS / "relu.py").read_text().replace(BIG_RELU, "rows = 1024\ncols = 1024")
    return make_task(source, "fixture/relu_1m", tmp_path)


def _record(monkeypatch, events: list, before_send=lambda process, during: None) -> None:
    send, wait, restage = rounds.stage_send, rounds.stage_wait, rounds.Rounds._restage

    def spy_send(process, sets, during):
        events.append(("send", during))
        before_send(process, during)
        return send(process, sets, during)

    def spy_wait(process, deadline, during):
        wait(process, deadline, during)
        events.append(("staged", during))

    def spy_restage(self, side, specs, deadline, during):
        events.append(("alone", during))
        return restage(self, side, specs, deadline, during)

    monkeypatch.setattr(rounds, "stage_send", spy_send)
    monkeypatch.setattr(rounds, "stage_wait", spy_wait)
    monkeypatch.setattr(rounds.Rounds, "_restage", spy_restage)


def test_each_new_layout_is_staged_on_both_sides_before_either_is_waited_for(tmp_path, verify_cache, monkeypatch):
    from verifier.api import verify
    from verifier.settings import VerifySettings

    events: list = []
    _record(monkeypatch, events)
    settings = VerifySettings.for_tests(verify_cache, latency_rounds=5)
    verdict = verify(_relu_task(tmp_path), (FIXTURES / "honest_relu_omp.py").read_text(), "cpu", settings)
    assert verdict.passed, verdict.feedback
    assert events, "no layout was staged in the timed rounds"
    assert not [e for e in events if e[0] == "alone"], events  # never one side after the other
    groups = [events[k:k + 4] for k in range(0, len(events), 4)]
    for group in groups:  # each new layout: both asked, then both answered
        assert [kind for kind, _ in group] == ["send", "send", "staged", "staged"], events
        assert {during for _, during in group} == {"reference's timing", "candidate's timing"}, events


def test_a_side_that_dies_before_its_stage_fails_the_verification_in_one_line(tmp_path, verify_cache, monkeypatch):
    from verifier.api import verify
    from verifier.settings import VerifySettings

    events: list = []

    def kill_the_candidate(process, during):
        if during == "candidate's timing" and not any(e == ("killed", during) for e in events):
            os.kill(process.pid(), signal.SIGKILL)
            events.append(("killed", during))

    _record(monkeypatch, events, kill_the_candidate)
    settings = VerifySettings.for_tests(verify_cache, latency_rounds=5)
    verdict = verify(_relu_task(tmp_path), (FIXTURES / "honest_relu_omp.py").read_text(), "cpu", settings)
    assert ("killed", "candidate's timing") in events, events
    assert not verdict.passed and verdict.failed_gate == "latency", verdict.feedback
    reason = verdict.gate("latency").reason
    assert "candidate's timing" in reason and "\n" not in reason, reason
    # the reference was asked in the same step and answered before the failure was raised
    assert ("staged", "reference's timing") in events[events.index(("killed", "candidate's timing")):], events
