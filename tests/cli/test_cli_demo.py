"""The demo's scripted kernels do what evokernel/demo/make_script.py's PLAN says, through the real
verifier on the bundled cpu build: each draft meant to fail fails at its gate, and every other
kernel passes the hack, compile and correctness gates (their speed is measured by the demo itself
and by benchmarks/known_good_speedups.py, not asserted here). The script is in sync with the kernels."""

from __future__ import annotations

import json

import pytest

from evokernel.demo import make_script

CASES = [(task, stem, gate) for task, stages in make_script.PLAN.items()
         for entries in stages.values() for stem, _prose, gate in entries]


def test_the_script_is_generated_from_the_kernels_and_fills_the_budget():
    assert make_script.SCRIPT.read_text() == make_script.render(), "run python -m evokernel.demo.make_script"
    script = json.loads(make_script.SCRIPT.read_text())
    assert "scripted" in script["label"] and "not produced by any model" in script["label"]
    for task, stages in make_script.PLAN.items():
        assert sum(len(entries) for entries in stages.values()) == make_script.BUDGET, task
        assert script["responses"][task]["distill"], task
    assert {p.stem for p in (make_script.HERE / "kernels").glob("*.py")} == {stem for _t, stem, _g in CASES}
    gates = {gate for _task, _stem, gate in CASES}
    assert {"hack", "compile", "correctness", None} <= gates  # a failure at each gate, and kernels that pass


@pytest.fixture(scope="module")
def demo_build(bundled_cpu_build):
    from kernelbench_npu.spec import load_build

    return load_build(bundled_cpu_build[1])


@pytest.mark.parametrize("task, stem, gate", CASES, ids=[stem for _t, stem, _g in CASES])
def test_each_demo_kernel_meets_its_planned_gate(demo_build, tmp_path_factory, task, stem, gate):
    from verifier.api import verify
    from verifier.settings import VerifySettings

    settings = VerifySettings.for_tests(tmp_path_factory.getbasetemp() / "demo-verify-cache", latency_rounds=1,
                                        timeout_s=VerifySettings().timeout_s)
    source = (make_script.HERE / "kernels" / f"{stem}.py").read_text()
    verdict = verify(demo_build.task(task), source, "cpu", settings)
    assert not verdict.infrastructure_error, verdict.infrastructure_error
    if gate is None:
        for name in ("hack", "compile", "correctness"):
            assert verdict.gate(name) is not None and verdict.gate(name).passed, verdict.feedback
    else:
        assert verdict.failed_gate == gate, verdict.feedback
