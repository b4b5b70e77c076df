"""Every kernel of the fixture corpus goes through the real verifier; its first failing gate
(or "pass") must be the one its header names.

Honest candidates span the cpu, cuda and triton backends. A cuda or triton "pass" means every gate
that can run here passes: without a GPU the verdict must fail first at the gate that is
unavailable here (cuda: correctness, after the real nvcc compile; triton: latency, after the AOT
compile and the interpreter's correctness check). Verifications run two at a time (verdict_pool).

The honest corpus of issue 24 (entries whose covers line starts with "honest (issue 24)": more than a
hundred kernels in the styles real solutions use) is too large to verify end to end in every run: by
default a representative subset (END_TO_END_BY_DEFAULT) goes through the verifier, and every honest
entry goes through the static policy and the parent-side build-argument reading, well under a second
each (test_every_honest_entry_passes_the_static_policy). VERIFIER_SLOW_TESTS=1 verifies every
entry end to end (about an hour on a quiet 2-core machine, most of it nvcc; `python -m
benchmarks.honest_corpus` prints the same corpus's false rejections grouped by cause).
"""

from __future__ import annotations

import os
from collections import Counter
from functools import lru_cache

import pytest
from honest_false_rejections import KNOWN_FALSE_REJECTIONS
from verdict_pool import VerdictPool
from verifier_corpus import CorpusEntry, corpus
from verifier_taskutil import fixture_task

from verifier.api import verify
from verifier.backends import get_backend
from verifier.gates.hack import static_gate
from verifier.gate_plan import GatePlan, plan_gates
from verifier.result import Verdict
from verifier.sandbox import seccomp
from verifier.settings import VerifySettings

# Verified task by task: a reference worker that served a task serves that task's next verification
# without a start-up (verifier.monitor.pool), so grouping the entries by task spares ~50 worker start-ups
# (interpreter and torch, ~1.1 s of CPU each) that the corpus's own order (65 changes of task) cost.
CORPUS = sorted(corpus(), key=lambda entry: (entry.backend, entry.task, entry.name))
CORPUS_SEED = 20261121  # fixed so the corpus meets the same inputs and perturbation every run
CUDA_COMPILE_S = 900.0  # nvcc on torch's headers: ~100 s of CPU each, two may overlap on busy cores
# An nvcc compile costs about 80 s of CPU on a quiet 2-core machine (cudafe++ 18 s, cicc 13 s, host g++ 12 s, the
# host unit 30 s), two to three times that on CI's busy cores (139 s of a CI run's 447 s in this module). Without
# VERIFIER_SLOW_TESTS=1 the corpus compiles one honest CUDA entry, the one whose headers come from the CUDA include
# tree fetched for a CPU torch (skipped where it was never fetched, as on CI): the other header source, torch's own
# headers in KernelBench's layout (load_inline at module level, cpp_sources declaring what cuda_sources define), is
# compiled by tests/backends/test_backends_verify.py's worked example through the same verify() path and gate.
# Every CUDA entry still passes the static policy and the build-argument reading below; VERIFIER_SLOW_TESTS=1
# compiles all.
SLOW = bool(os.environ.get("VERIFIER_SLOW_TESTS"))
ALL_CUDA = SLOW
CUDA_COMPILED_BY_DEFAULT = frozenset({"honest_cuda_stream_header"})
ISSUE_24 = "honest (issue 24)"  # the covers prefix of the large honest corpus
# The issue-24 entries verified end to end without VERIFIER_SLOW_TESTS: one or two per style family and
# backend, fast loaders only (no torch extension build, no nvcc); the others get the static tier below.
END_TO_END_BY_DEFAULT = frozenset({
    "honest_cpu_struct_online_softmax",  # C++ methods named like tensor ops
    "honest_cpu_omp_partials_mean_dim",  # OpenMP per-thread partials
    "honest_cpu_avx512_scale_add",  # AVX-512 intrinsics under #ifdef
    "honest_cpu_template_tile_bmm",  # templates
    "honest_cpu_functools_operator_numel",  # functools/operator
    "honest_cpu_get_num_threads_partials",  # torch.get_num_threads() sizing the work
    "honest_cpu_super_linear_relu",  # super(ModelNew, self).__init__() with nn.Linear
    "honest_cpu_join_source_parts",  # a source assembled at import
    "honest_cpu_several_kernels_attention",  # several kernels per file
    "honest_cpu_main_selftest_softmax",  # an if __name__ == "__main__": self-test
    "honest_triton_functools_operator_swish",
    "honest_triton_super_layernorm_randn",
    "honest_triton_computed_launch_config",
    "honest_triton_several_kernels_log_softmax",
})


class KnownFalseRejection(Exception):
    """Raised when an honest candidate is rejected exactly as KNOWN_FALSE_REJECTIONS says."""


def _param(entry: CorpusEntry):
    marks = []
    if known := KNOWN_FALSE_REJECTIONS.get(entry.name):
        reason = known.cause + (f"; then {known.later.cause}" if known.later else "")
        marks.append(pytest.mark.xfail(raises=KnownFalseRejection, strict=True, reason=reason))
    if entry.backend == "cuda" or _builds_torch_extension(entry):  # ~100 s of nvcc / ~45 s of g++ on torch's headers
        marks += [pytest.mark.slow, pytest.mark.timeout(CUDA_COMPILE_S + 300)]
    if not _compiled_here(entry):
        what = "~2 min of nvcc" if entry.backend == "cuda" else "issue 24's large honest corpus"
        marks.append(pytest.mark.skip(reason=f"{what}; set VERIFIER_SLOW_TESTS=1 to verify every entry end to end "
                                             "(its static policy is checked regardless)"))
    return pytest.param(entry, id=entry.name, marks=marks)


def verdict_settings_bound() -> float:
    return VerifySettings().plausibility_bound


def _builds_torch_extension(entry: CorpusEntry) -> bool:
    return "load_inline" in entry.path.read_text()


@lru_cache(maxsize=None)
def gate_plan(backend: str) -> GatePlan:
    return plan_gates(get_backend(backend).availability())


def expected_gate(entry: CorpusEntry) -> str:
    """The header's expectation, with "pass" read as "passes every gate that runs here"."""
    if entry.expect != "pass" or not gate_plan(entry.backend).missing:
        return entry.expect
    return gate_plan(entry.backend).missing[0][0]


def _verify(entry: CorpusEntry, cache) -> Verdict:
    changes = {"seed": CORPUS_SEED, "disabled_checks": entry.disable}
    if entry.backend == "cuda" or _builds_torch_extension(entry):
        changes["compile_timeout_s"] = CUDA_COMPILE_S
    if entry.timeout_s:
        changes["timeout_s"] = entry.timeout_s
    settings = VerifySettings.for_tests(cache, **changes)
    return verify(fixture_task(entry.task), entry.path.read_text(), entry.backend, settings)


def _runnable_here(entry: CorpusEntry) -> str:
    """Why this entry cannot be checked on this machine, or ""."""
    if entry.kind == "sandbox" and not seccomp.supported():
        return "process-level attacks are only contained with the seccomp filter (x86_64 Linux)"
    if not gate_plan(entry.backend).runs("compile"):
        return f"the {entry.backend} backend cannot compile here: {dict(gate_plan(entry.backend).missing)['compile']}"
    if entry.backend == "cuda" and (why := _cuda_headers_missing(entry)):
        return why
    return ""


def _cuda_headers_missing(entry: CorpusEntry) -> str:
    """A source that includes torch's CUDA headers compiles only where a CUDA torch, or the include tree
    `evokernel toolchain fetch-cuda-headers` fetches, is there: a machine that never fetched it (CI's
    empty cache) cannot check this entry, and says so (the fetch itself: test_backends_cuda_headers.py)."""
    from verifier.backends import cuda_headers

    if not cuda_headers.needs_cuda_torch(entry.path.read_text()):
        return ""
    if cuda_headers.installed() is not None or cuda_headers.local_torch_has_cuda_headers():
        return ""
    return (f"needs torch's CUDA include tree (the local torch is a CPU build): run `{cuda_headers.FETCH_COMMAND}` "
            f"once to check this entry")


def _compiled_here(entry: CorpusEntry) -> bool:
    """Whether this run verifies the entry end to end (VERIFIER_SLOW_TESTS=1: every entry)."""
    if SLOW:
        return True
    if entry.covers.startswith(ISSUE_24):
        return entry.name in END_TO_END_BY_DEFAULT
    return entry.backend != "cuda" or entry.name in CUDA_COMPILED_BY_DEFAULT


@pytest.fixture(scope="module")
def verdicts(verify_cache):
    by_name = {e.name: e for e in CORPUS}
    pool = VerdictPool([e.name for e in CORPUS if not _runnable_here(e) and _compiled_here(e)],
                       lambda name: _verify(by_name[name], verify_cache))
    yield pool
    pool.close()


@pytest.mark.parametrize("entry", [_param(e) for e in CORPUS])
def test_corpus_first_failing_gate(entry, verdicts):
    if why := _runnable_here(entry):
        pytest.skip(why)
    verdict = verdicts.get(entry.name)
    assert not verdict.infrastructure_error, verdict.infrastructure_error
    failed = verdict.failed_gate or "pass"
    known = KNOWN_FALSE_REJECTIONS.get(entry.name)
    if known and known.matches(failed, verdict.feedback):
        raise KnownFalseRejection(verdict.feedback)
    assert failed == expected_gate(entry), verdict.feedback
    if entry.reason:
        assert entry.reason in verdict.feedback, verdict.feedback
    if entry.expect == "pass" and failed != "pass":  # every gate before it passed; this one cannot run here
        assert verdict.gate(failed).reason.startswith(f"{failed} unavailable here"), verdict.feedback
    elif entry.expect == "pass":
        assert verdict.latency is not None and verdict.latency.candidate_ms > 0
    if entry.kind == "moot":  # the attack gained nothing: no speedup beyond what the kernel itself reaches
        assert verdict.latency is None or verdict.latency.speedup < verdict_settings_bound(), verdict.feedback


def test_corpus_has_the_required_kinds():
    kinds = Counter(e.kind for e in CORPUS)
    honest = Counter(e.backend for e in CORPUS if e.kind == "honest")
    assert kinds["honest"] >= 40 and honest["cpu"] >= 20 and honest["cuda"] >= 5 and honest["triton"] >= 8
    issue_24 = Counter(e.backend for e in CORPUS if e.covers.startswith(ISSUE_24))
    assert sum(issue_24.values()) >= 100 and issue_24["cpu"] >= 50 and issue_24["cuda"] >= 15 and issue_24["triton"] >= 20
    assert END_TO_END_BY_DEFAULT <= {e.name for e in CORPUS if e.covers.startswith(ISSUE_24)}
    assert kinds["hack"] >= 20
    assert {"broken_syntax_error", "broken_link_error", "broken_wrong_shape", "broken_segfault",
            "broken_infinite_loop"} <= {e.name for e in CORPUS}
    assert all(e.expect == "pass" for e in CORPUS if e.kind in ("honest", "moot"))
    assert all(e.expect != "pass" for e in CORPUS if e.kind not in ("honest", "moot"))
    assert set(KNOWN_FALSE_REJECTIONS) <= {e.name for e in CORPUS if e.kind == "honest"}


def _static_param(entry: CorpusEntry):
    known = KNOWN_FALSE_REJECTIONS.get(entry.name)
    marks = [pytest.mark.xfail(raises=KnownFalseRejection, strict=True, reason=known.cause)] if known and known.static else []
    return pytest.param(entry, id=entry.name, marks=marks)


@pytest.mark.parametrize("entry", [_static_param(e) for e in CORPUS if e.kind == "honest"])
def test_every_honest_entry_passes_the_static_policy(entry):
    """The parent-side tier, which needs no compiler or sandbox (well under a second): the static hack gate and the
    backend's precheck (syntax, build arguments read without running the candidate). Every honest entry
    gets it, including those the default run does not verify end to end."""
    source, backend = entry.path.read_text(), get_backend(entry.backend)
    gate = static_gate(source, "float32", entry.disable, backend.static_imports)
    failed, text = ("hack", gate.detail) if not gate.passed else ("compile", backend.precheck(source))
    known = KNOWN_FALSE_REJECTIONS.get(entry.name)
    if known and known.static and failed == known.gate and known.text in text:
        raise KnownFalseRejection(text)
    assert gate.passed and not text, f"{failed}: {text}"
