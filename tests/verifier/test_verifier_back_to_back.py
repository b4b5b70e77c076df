"""Verifications back to back in one process (what a campaign does): a session that ends early must
leave no reader thread behind, or it could read the next session's pipe under a reused fd number."""

from __future__ import annotations

import threading
from pathlib import Path

from verifier_taskutil import make_task

from verifier.api import verify
from verifier.settings import VerifySettings

BACKENDS = Path(__file__).resolve().parents[2] / "verifier" / "backends"
EXAMPLE_TASK = (BACKENDS / "cpu_example_task.txt").read_text()
EXAMPLE_CANDIDATE = (BACKENDS / "cpu_example_candidate.txt").read_text()
LINK_ERROR = EXAMPLE_CANDIDATE.replace('load_c(SOURCE, {"linear_relu"', 'load_c(SOURCE, {"no_such_symbol"')


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "_collect_references" in t.name and t.is_alive()]


def test_early_failure_leaves_no_reader_and_the_next_verification_is_intact(tmp_path, verify_cache):
    task = make_task(EXAMPLE_TASK, "example/linear_relu", tmp_path)
    settings = VerifySettings.for_tests(verify_cache)
    for _ in range(2):
        failed = verify(task, LINK_ERROR, "cpu", settings)
        assert failed.failed_gate == "compile", failed.feedback
        assert not _readers(), "the reference reader outlived its session"
        passed = verify(task, EXAMPLE_CANDIDATE, "cpu", settings)
        assert passed.passed, passed.feedback
        assert not _readers()
