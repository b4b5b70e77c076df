"""Every kernel of the fixture corpus goes through the real verifier; its first failing gate
(or "pass") must be the one its header names."""

from __future__ import annotations

import pytest
from verifier_corpus import corpus
from verifier_taskutil import fixture_task

from verifier.api import verify
from verifier.sandbox import seccomp
from verifier.settings import VerifySettings

CORPUS = corpus()
CORPUS_SEED = 20261121  # fixed so the content-replay fixture meets the same perturbation every run


@pytest.mark.parametrize("entry", CORPUS, ids=[e.name for e in CORPUS])
def test_corpus_first_failing_gate(entry, verify_cache):
    if entry.kind == "sandbox" and not seccomp.supported():
        pytest.skip("process-level attacks are only contained with the seccomp filter (x86_64 Linux)")
    changes = {"seed": CORPUS_SEED, "disabled_checks": entry.disable}
    if entry.timeout_s:
        changes["timeout_s"] = entry.timeout_s
    settings = VerifySettings.for_tests(verify_cache, **changes)
    verdict = verify(fixture_task(entry.task), entry.path.read_text(), "cpu", settings)
    assert not verdict.infrastructure_error, verdict.infrastructure_error
    assert (verdict.failed_gate or "pass") == entry.expect, verdict.feedback
    if entry.reason:
        assert entry.reason in verdict.feedback, verdict.feedback
    if entry.expect == "pass":
        assert verdict.latency is not None and verdict.latency.candidate_ms > 0


def test_corpus_has_the_required_kinds():
    kinds = [e.kind for e in CORPUS]
    assert kinds.count("honest") >= 8
    assert kinds.count("hack") >= 20
    assert {"broken_syntax_error", "broken_link_error", "broken_wrong_shape", "broken_segfault",
            "broken_infinite_loop"} <= {e.name for e in CORPUS}
    assert all(e.expect == "pass" for e in CORPUS if e.kind == "honest")
    assert all(e.expect != "pass" for e in CORPUS if e.kind != "honest")
