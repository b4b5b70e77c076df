"""Every kernel of the fixture corpus goes through the real verifier; its first failing gate
(or "pass") must be the one its header names.

Verifications mostly wait on their sandbox processes, so outside pytest-xdist the corpus runs
two at a time (each test waits for its own verdict and queues the next entries).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from verifier_corpus import CorpusEntry, corpus
from verifier_taskutil import fixture_task

from verifier.api import verify
from verifier.result import Verdict
from verifier.sandbox import seccomp
from verifier.settings import VerifySettings

CORPUS = corpus()
CORPUS_SEED = 20261121  # fixed so the corpus meets the same inputs and perturbation every run
IN_FLIGHT = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2


def _verify(entry: CorpusEntry, cache) -> Verdict:
    changes = {"seed": CORPUS_SEED, "disabled_checks": entry.disable}
    if entry.timeout_s:
        changes["timeout_s"] = entry.timeout_s
    settings = VerifySettings.for_tests(cache, **changes)
    return verify(fixture_task(entry.task), entry.path.read_text(), "cpu", settings)


class _Verdicts:
    def __init__(self, cache) -> None:
        self.cache, self.pool, self.futures = cache, ThreadPoolExecutor(IN_FLIGHT), {}

    def get(self, entry: CorpusEntry) -> Verdict:
        start = CORPUS.index(entry)
        for ahead in CORPUS[start:start + IN_FLIGHT]:
            if ahead.name not in self.futures:
                self.futures[ahead.name] = self.pool.submit(_verify, ahead, self.cache)
        future: Future = self.futures.pop(entry.name)
        return future.result()


@pytest.fixture(scope="module")
def verdicts(verify_cache):
    holder = _Verdicts(verify_cache)
    yield holder
    holder.pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("entry", CORPUS, ids=[e.name for e in CORPUS])
def test_corpus_first_failing_gate(entry, verdicts):
    if entry.kind == "sandbox" and not seccomp.supported():
        pytest.skip("process-level attacks are only contained with the seccomp filter (x86_64 Linux)")
    verdict = verdicts.get(entry)
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
