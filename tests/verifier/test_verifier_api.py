"""verify() end to end on the scaffold's worked example, plus settings, backends and feedback."""

from __future__ import annotations

from pathlib import Path

import pytest
from verifier_taskutil import make_task

from verifier.api import verify
from verifier.backends import get_backend
from verifier.settings import VerifySettings

BACKENDS = Path(__file__).resolve().parents[2] / "verifier" / "backends"
EXAMPLE_TASK = (BACKENDS / "cpu_example_task.txt").read_text()
EXAMPLE_CANDIDATE = (BACKENDS / "cpu_example_candidate.txt").read_text()


def test_scaffold_example_passes_every_gate_and_reuses_the_compile_cache(tmp_path, verify_cache):
    task = make_task(EXAMPLE_TASK, "example/linear_relu", tmp_path)
    settings = VerifySettings.for_tests(verify_cache)
    first = verify(task, EXAMPLE_CANDIDATE, "cpu", settings)
    assert first.passed, first.feedback
    assert [g.name for g in first.gates] == ["hack", "compile", "correctness", "latency"]
    assert "speedup" in first.feedback and first.latency.rounds == settings.latency_rounds
    roof = first.latency.roofline  # counted on the reference: x, y, weight and bias once; addmm + relu
    assert roof is not None and roof.bytes_moved == 4 * (61 * 300 + 61 * 129 + 300 * 129 + 129)
    assert roof.flops >= 2 * 61 * 300 * 129 and roof.line() in first.feedback
    second = verify(task, EXAMPLE_CANDIDATE, "cpu", settings)
    assert second.passed and second.facts.compile_cached is True
    assert first.facts.seed != second.facts.seed  # a secret seed per verification
    json_dict = second.to_json_dict()
    assert set(json_dict) == {"task_id", "passed", "failed_gate", "gates", "latency", "feedback", "warnings"}
    assert set(json_dict["latency"]) >= {"candidate_ms", "reference_ms", "speedup", "ci_low", "ci_high", "flagged"}


def test_scaffold_states_the_contract_and_contains_the_example():
    text = get_backend("cpu").scaffold(None)
    assert EXAMPLE_CANDIDATE.strip() in text and EXAMPLE_TASK.strip() in text
    for phrase in ("from verifier.cpu_native import load_c", "-ffast-math", "fresh tensors", "thread budget",
                   "load_inline", "same seed"):
        assert phrase in text


def test_task_scaffold_names_the_tolerance(tmp_path):
    task = make_task(EXAMPLE_TASK, "example/linear_relu", tmp_path, atol=1e-3, rtol=2e-3)
    assert "atol=0.001 rtol=0.002" in get_backend("cpu").scaffold(task)


def test_unknown_backend_is_an_infrastructure_error(tmp_path):
    verdict = verify(make_task(EXAMPLE_TASK, "example/x", tmp_path), EXAMPLE_CANDIDATE, "no-such-backend")
    assert verdict.infrastructure_error and not verdict.passed
    assert verdict.feedback.startswith("VERIFIER ERROR")


def test_settings_are_validated():
    with pytest.raises(ValueError, match="correctness_trials"):
        VerifySettings(correctness_trials=4)
    with pytest.raises(ValueError, match="timeout_s"):
        VerifySettings(timeout_s=0)


def test_cpu_backend_reports_availability():
    availability = get_backend("cpu").availability()
    assert availability.available, availability.reason
    assert availability.line().startswith("cpu: available")
