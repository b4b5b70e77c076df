"""Issue 23, classes 1 and 2: code a candidate runs before it is confined, and reports the parent
takes from it (the candidate: tests/verifier/z23_preconfinement.py, one ``load_inline`` build).

One verification under the full static policy: every static check that runs before any candidate
code (the parent's, on the source) passes it, so containment of what its static initializer does
is the sandbox's alone; the checks on the built objects would refuse it (a library that calls
``unlink`` and ``setxattr``), unless their findings come from the candidate's own report. Each
test below reads one consequence of that single verification: nothing reached the loopback
listeners, no process outlived it, the manifest and lake file kept bytes, mode, mtime and xattrs,
the poisoned build slot never reached the compile cache (an honest candidate on that source passes
from the cache afterwards), the trusted side wrote nothing outside its cache, and the verdict
failed the hack gate (the findings were computed by the trusted side).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from escape_corpus import POISON_TARGET
from escape_world import DAEMON_PREFIX, Survivors, Targets, with_native_source
from verifier_taskutil import FIXTURES, fixture_task
from z23_preconfinement import candidate

from verifier.api import verify
from verifier.gates.hack import static_gate
from verifier.result import Verdict
from verifier.sandbox import landlock, seccomp
from verifier.settings import VerifySettings

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (landlock.abi_version()[0] and seccomp.supported()),
                                                   reason="needs Landlock and the x86_64 seccomp filter")]
DAEMON = DAEMON_PREFIX + "p"
HONEST = (FIXTURES / "honest_relu_omp.py").read_text()


@dataclass(frozen=True)
class Outcome:
    source: str
    verdict: Verdict
    targets: Targets
    before: dict[str, str]
    survivors: list[str]
    escaped: list[Path]
    honest_after: Verdict


@pytest.fixture(scope="module")
def outcome(tmp_path_factory) -> Outcome:
    base = tmp_path_factory.mktemp("z23-preconfinement")
    targets = Targets.create(base / "targets", "preconfinement", 0)
    source = candidate({**targets.fill, "DAEMON_NAME": DAEMON})
    cache = base / "cache"
    before = targets.state()
    with Survivors(DAEMON) as survivors:
        verdict = verify(fixture_task("relu"), source, "cpu",
                         VerifySettings.for_tests(cache, seed=23, compile_timeout_s=900, timeout_s=90))
        alive = survivors.check(grace_s=2.0)
    honest = verify(fixture_task("relu"), with_native_source(HONEST, POISON_TARGET), "cpu",
                    VerifySettings.for_tests(cache, seed=24))
    escaped = [p for p in base.rglob("z23-escaped*")]
    return Outcome(source, verdict, targets, before, alive, escaped, honest)


def test_no_static_check_that_runs_before_candidate_code_refuses_it(outcome):
    """The premise: only confinement (and checks on the built objects) can stop this candidate."""
    gate = static_gate(outcome.source, "float32")
    assert gate.passed, gate.detail


def test_the_verification_itself_completes(outcome):
    assert not outcome.verdict.infrastructure_error, outcome.verdict.infrastructure_error


def test_no_secret_reaches_a_loopback_udp_listener(outcome):
    assert not outcome.targets.udp.received, outcome.targets.udp.received[:2]


def test_no_connection_reaches_a_loopback_tcp_listener(outcome):
    assert not outcome.targets.tcp.received, outcome.targets.tcp.received[:2]


def test_no_process_outlives_the_verification(outcome):
    assert not outcome.survivors, outcome.survivors


def test_the_manifest_and_the_lake_file_keep_bytes_mode_mtime_and_xattrs(outcome):
    problems = [p for p in outcome.targets.problems(outcome.before) if p.startswith("changed")]
    assert not problems, problems


def test_a_build_slot_written_before_the_report_never_reaches_the_compile_cache(outcome):
    """The candidate wrote a wrong library into the slot of another source's key: the next honest
    candidate with that source must still pass."""
    assert outcome.honest_after.passed, outcome.honest_after.feedback


def test_the_trusted_side_writes_nothing_outside_its_cache(outcome):
    """A reported artifact path with ``..`` must not make the parent write outside the cache."""
    assert not outcome.escaped, outcome.escaped


def test_a_forged_compile_report_does_not_hide_the_build_findings(outcome):
    """The findings on what was built (unlink, setxattr) are the trusted side's: a hack failure."""
    assert outcome.verdict.failed_gate == "hack", outcome.verdict.feedback
