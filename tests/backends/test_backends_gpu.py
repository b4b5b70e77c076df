"""The CUDA and Triton backends through the real verifier on a GPU (CI has none: skipped there).

Every known-good Triton solution and an honest ReLU kernel must pass every gate for real (none
"unavailable here") with a measured speedup (the runner and the reference worker both on the GPU, each
call primed, timed and collected by the monitor: verifier.sandbox.serve); the same kernel with a wrong
constant must fail correctness; torch compute added to forward is observed on the device.
"""

from __future__ import annotations

import pytest

from benchmarks.gpu_fidelity import task_spec
from kernelbench_npu.spec import TaskSpec
from verifier.backends.scaffolds import fenced_blocks, scaffold_sections

pytestmark = pytest.mark.gpu


def relu_task(backend: str) -> TaskSpec:
    return task_spec("L1/001_relu", backend)  # the bundled problem at its own sizes


def example(backend: str) -> str:
    return fenced_blocks(dict(scaffold_sections(backend))["Worked example: ReLU"], "python")[0]


WRONG = {"cuda": ("v > 0.0f ? v : 0.0f", "v > 0.0f ? v : 0.5f"), "triton": ("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)")}


@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_honest_kernel_passes_with_a_speedup_and_a_wrong_one_fails_correctness(backend):
    from verifier.api import verify
    from verifier.gate_plan import is_unavailable

    honest = verify(relu_task(backend), example(backend), backend)
    assert honest.passed, honest.feedback
    assert [g.name for g in honest.gates] == ["hack", "compile", "correctness", "latency"]
    assert not any(is_unavailable(g) for g in honest.gates), honest.feedback
    assert honest.latency is not None and honest.latency.speedup > 0 and honest.latency.candidate_ms > 0
    print(f"{backend}: candidate {honest.latency.candidate_ms:.4f} ms, reference {honest.latency.reference_ms:.4f} ms, "
          f"speedup {honest.latency.speedup:.2f} [{honest.latency.ci_low:.2f}, {honest.latency.ci_high:.2f}]")
    old, new = WRONG[backend]
    assert old in example(backend)
    wrong = verify(relu_task(backend), example(backend).replace(old, new), backend)
    assert wrong.failed_gate == "correctness", wrong.feedback


@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_torch_compute_in_forward_is_observed_on_the_gpu(backend):
    """The runner's ATen observer sees a device op too: a kernel that adds torch.relu after its launch
    fails the hack gate at run time (the static check that would refuse it first is off)."""
    from verifier.api import verify
    from verifier.gates.hack_python import CHECKS
    from verifier.settings import VerifySettings

    cheating = example(backend) + ("\n\n_Kernel = ModelNew\n\n\nclass ModelNew(_Kernel):\n"
                                   "    def forward(self, *args):\n        return torch.relu(super().forward(*args))\n")
    verdict = verify(relu_task(backend), cheating, backend, VerifySettings(disabled_checks=tuple(CHECKS)))
    assert verdict.failed_gate == "hack" and "torch compute observed in forward" in verdict.feedback, verdict.feedback


def test_every_known_good_triton_solution_passes_on_the_gpu_with_a_trusted_speedup(tmp_path):
    """The shipped Triton solutions (kernelbench_npu/solutions/triton) on their bundled problems at the
    problems' own sizes: every gate passes on the device, none "unavailable here", the figure trusted.
    benchmarks.gpu_fidelity times the same kernels plainly (CUDA events) beside the verifier."""
    from benchmarks.gpu_fidelity import task_spec
    from kernelbench_npu.known_good import known_good
    from verifier.api import verify
    from verifier.gate_plan import is_unavailable
    from verifier.settings import VerifySettings

    solutions = known_good("triton")
    assert len(solutions) >= 7
    for task_id, path in solutions.items():
        verdict = verify(task_spec(task_id, "triton"), path.read_text(), "triton", VerifySettings(cache_dir=tmp_path))
        assert verdict.passed, f"{task_id}: {verdict.feedback}"
        assert not any(is_unavailable(g) for g in verdict.gates), f"{task_id}: {verdict.feedback}"
        assert verdict.latency is not None and verdict.latency.trusted, f"{task_id}: {verdict.feedback}"
        print(f"{task_id}: speedup {verdict.latency.speedup:.2f} [{verdict.latency.ci_low:.2f}, "
              f"{verdict.latency.ci_high:.2f}]")
