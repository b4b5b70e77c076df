"""verify() and `evokernel verify` with backends that are only partly available here (no GPU):
cuda runs hack + the real nvcc compile, triton runs hack + AOT compile + interpreter correctness;
the gates they cannot run fail as "<gate> unavailable here: ...", never as infrastructure errors."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from typer.testing import CliRunner

from cli.main import app
from kernelbench_npu.spec import TaskSpec
from verifier.api import verify
from verifier.backends.base import Availability, GateCapability
from verifier.backends.cuda import find_nvcc
from verifier.backends.scaffolds import fenced_blocks, scaffold_sections
from verifier.backends.small_shapes import shrink_task_source
from verifier.backends.triton_backend import triton_version
from verifier.gate_plan import plan_gates
from verifier.gates.hack import static_gate
from verifier.settings import VerifySettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verifier"))
from verifier_taskutil import TASKS, make_task  # noqa: E402

no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: every gate runs")
needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc (CUDA toolkit) is not installed")
needs_triton = pytest.mark.skipif(triton_version() is None, reason="triton is not installed")
BIG_RELU = '''import torch
import torch.nn as nn

batch_size = 16
dim = 16384


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def example(backend: str) -> str:
    return fenced_blocks(dict(scaffold_sections(backend))["Worked example: ReLU"], "python")[0]


def relu_task() -> TaskSpec:
    return make_task((TASKS / "relu.py").read_text(), "L1/relu")


@pytest.fixture(autouse=True)
def restore_interpreter_flag(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


def test_gate_plan_follows_the_per_gate_capabilities():
    caps = lambda *flags: tuple(GateCapability(g, f, "no GPU" if not f else "")  # noqa: E731
                                for g, f in zip(("compile", "correctness", "latency"), flags))
    full = plan_gates(Availability("x", True, "", caps(True, True, True)))
    assert full.runnable == {"hack", "compile", "correctness", "latency"} and not full.missing
    compile_only = plan_gates(Availability("x", False, "no GPU", caps(True, False, False)))
    assert compile_only.runnable == {"hack", "compile"} and compile_only.substantive
    assert compile_only.unavailable("correctness").reason == "correctness unavailable here: no GPU"
    latency_without_correctness = plan_gates(Availability("x", False, "?", caps(True, False, True)))
    assert not latency_without_correctness.runs("latency")
    nothing = plan_gates(Availability("ascendc", False, "CANN toolkit not found", ()))
    assert not nothing.substantive and nothing.unavailable("compile").reason.endswith("CANN toolkit not found")


def test_small_shapes_halve_large_literals_only():
    small = shrink_task_source(BIG_RELU.replace("batch_size = 16", "batch_size = 16\nodd = 1001\nk = 3000"))
    assert "dim = 256\n" in small and "batch_size = 16\n" in small
    assert "odd = 1001\n" in small and "k = 375\n" in small and "torch.randn(batch_size, dim)" in small


def test_triton_imports_pass_the_hack_gate_only_for_the_triton_backend():
    assert static_gate(example("triton"), "float32", (), frozenset({"triton", "triton.language"})).passed
    cpu_policy = static_gate(example("triton"), "float32")
    assert not cpu_policy.passed and "import of 'triton' is not allowed" in cpu_policy.detail


@no_gpu
@needs_nvcc
def test_cuda_without_gpu_compiles_with_nvcc_and_says_correctness_is_unavailable(verifier_cache):
    verdict = verify(relu_task(), example("cuda"), "cuda", VerifySettings.for_tests(verifier_cache))
    assert not verdict.infrastructure_error, verdict.infrastructure_error
    assert [(g.name, g.passed) for g in verdict.gates] == [
        ("hack", True), ("compile", True), ("correctness", False), ("latency", False)]
    assert verdict.failed_gate == "correctness" and not verdict.passed and not verdict.feasible
    assert verdict.gate("correctness").reason == "correctness unavailable here: no GPU"
    assert "[compile] ok" in verdict.feedback and "cannot run correctness, latency" in verdict.feedback
    again = verify(relu_task(), example("cuda"), "cuda", VerifySettings.for_tests(verifier_cache))
    assert again.failed_gate == "correctness" and again.facts.compile_cached is True  # no second nvcc run


@no_gpu
@needs_nvcc
def test_cuda_compile_errors_reach_the_feedback(verifier_cache):
    # kernel-only (no host unit for g++) and a missing header that stops nvcc in the preprocessor,
    # before the slow torch front-end pass: seconds, not minutes
    broken = ('import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n'
              'SRC = """\n#include <no_such_header.cuh>\n__global__ void k(float* y) { y[0] = 1; }\n"""\n'
              'ext = load_inline(name="bad_ext", cpp_sources="", cuda_sources=SRC)\n\n'
              'class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.k(x)\n')
    verdict = verify(relu_task(), broken, "cuda", VerifySettings.for_tests(verifier_cache))
    assert verdict.failed_gate == "compile" and [g.name for g in verdict.gates] == ["hack", "compile"]
    assert "nvcc failed" in verdict.feedback
    assert "no_such_header.cuh: No such file or directory" in verdict.feedback


@no_gpu
@needs_triton
def test_triton_without_gpu_compiles_aot_checks_in_the_interpreter_and_skips_latency(verifier_cache, tmp_path):
    task = make_task(BIG_RELU, "L1/relu_big", tmp_path)
    verdict = verify(task, example("triton"), "triton", VerifySettings.for_tests(verifier_cache))
    assert not verdict.infrastructure_error, verdict.infrastructure_error
    assert [(g.name, g.passed) for g in verdict.gates] == [
        ("hack", True), ("compile", True), ("correctness", True), ("latency", False)]
    assert verdict.gate("latency").reason == "latency unavailable here: no GPU"
    assert verdict.feasible and not verdict.passed and verdict.facts.seccomp is True


@no_gpu
@needs_triton
def test_a_wrong_triton_kernel_fails_correctness_in_the_interpreter(verifier_cache):
    wrong = example("triton").replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.1)")
    verdict = verify(relu_task(), wrong, "triton", VerifySettings.for_tests(verifier_cache))
    assert verdict.failed_gate == "correctness" and "mismatch" in verdict.gate("correctness").reason
    assert len(verdict.gates) == 3


def make_build(root: Path, backend: str = "cpu") -> Path:
    """A one-task build (L1/relu at the bundled sizes) for ``backend``."""
    (root / "problems").mkdir(parents=True)
    source = (TASKS / "relu.py").read_text()
    (root / "problems" / "relu.py").write_text(source)
    row = dict(task_id="L1/relu", level=1, category="activation", name="relu",
               source_sha256=hashlib.sha256(source.encode()).hexdigest(), variant=backend, dtype="float32",
               original_shapes="{}", adapted_shapes="{}", atol=1e-4, rtol=1e-4, lint_status="ok",
               lint_reason=None, reference_ms=0.1, problem_file="relu.py")
    pq.write_table(pa.Table.from_pylist([row]), root / "manifest.parquet")
    (root / "build.json").write_text(json.dumps({"build_hash": "test", "backend": backend}))
    return root


@pytest.fixture()
def build_dir(tmp_path):
    return make_build(tmp_path / "build")


def _cli(build_dir: Path, backend: str, candidate: Path):
    return CliRunner().invoke(app, ["verify", "--build", str(build_dir), "--task", "L1/relu", "--candidate",
                                    str(candidate), "--backend", backend, "--rounds", "5", "--json"])


@no_gpu
@pytest.mark.parametrize("backend, failed", [
    pytest.param("cuda", "correctness", marks=needs_nvcc), pytest.param("triton", "latency", marks=needs_triton)])
def test_cli_exits_1_when_a_gate_is_unavailable_here(tmp_path, monkeypatch, xdg_cache, backend, failed):
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg_cache))  # reuses the session's nvcc build
    candidate = tmp_path / "candidate.py"
    candidate.write_text(example(backend))
    result = _cli(make_build(tmp_path / f"build-{backend}", backend), backend, candidate)
    assert result.exit_code == 1, result.output
    payload = json.loads(result.output)
    assert payload["failed_gate"] == failed and f"{failed} unavailable here" in payload["feedback"]


def test_cli_exits_2_for_a_backend_that_can_run_nothing_here(tmp_path):
    from verifier.backends.ascendc import AscendCBackend

    if any(g.available for g in AscendCBackend().availability().gates):
        pytest.skip("this machine has part of the CANN toolchain")
    candidate = tmp_path / "candidate.py"
    candidate.write_text(example("triton"))  # never looked at: ascendc cannot run anything here
    result = CliRunner().invoke(app, ["verify", "--build", str(make_build(tmp_path / "npu", "ascendc")), "--task",
                                      "L1/relu", "--candidate", str(candidate), "--backend", "ascendc"])
    assert result.exit_code == 2 and "backend ascendc unavailable:" in result.output


def test_cli_refuses_another_backend_than_the_builds_before_any_sandbox_starts(build_dir, tmp_path):
    """issue 39: `verify --backend cuda` on a CPU build ran nvcc's sandbox on a CPU-sized task for 20 s
    and blamed the candidate (SIGSYS); like `campaign`, it is one line now, and nothing runs."""
    candidate = tmp_path / "candidate.py"
    candidate.write_text(example("cuda"))
    result = _cli(build_dir, "cuda", candidate)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --backend cuda: the build at {build_dir} is for backend 'cpu' (leave --backend out, or make a cuda "
        "build: `evokernel build --backend cuda --out DIR`)"]
