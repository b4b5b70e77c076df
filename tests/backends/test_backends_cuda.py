"""CUDA backend without a GPU: the recorded load_inline call as translation units, real nvcc compiles
in the confined builder."""

from __future__ import annotations

import pytest
from build_jobs import build_call

from verifier.backends.base import BuildJob
from verifier.backends.cuda import CudaBackend, arch_list_entry, find_nvcc, ptxas_summary
from verifier.backends.cuda_sources import CandidateFormatError, extension_from_call
from verifier.backends.scaffolds import fenced_blocks, scaffold_sections
from verifier.backends.toolrun import run_tool

needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc (CUDA toolkit) is not installed")


def scaffold_example() -> str:
    return fenced_blocks(dict(scaffold_sections("cuda"))["Worked example: ReLU"], "python")[0]


def test_the_recorded_call_becomes_the_units_load_inline_would_compile():
    ext = extension_from_call({"name": "my_ext", "cpp_sources": ["torch::Tensor f(torch::Tensor x);"],
                               "cuda_sources": ["__global__ void k() {}", "// more"], "functions": ["f"]})
    assert ext.name == "my_ext" and ext.functions == ("f",)
    assert ext.cuda_sources == "__global__ void k() {}\n// more"
    assert ext.cuda_unit().startswith("#include <torch/types.h>")
    assert 'm.def("f", torch::wrap_pybind_function(f), "f");' in ext.cpp_unit()


@pytest.mark.parametrize("args, message", [
    ({"name": "x", "cpp_sources": "int f();"}, "no cuda_sources"),
    ({"name": "x", "cuda_sources": "a", "functions": {"f": 1}}, "functions= must be a list"),
    ({"name": "not a name", "cuda_sources": "a"}, "name must be a Python identifier"),
    ({"name": "x", "cuda_sources": 3}, "cuda_sources must be a string"),
])
def test_unsupported_calls_say_what_to_change(args, message):
    with pytest.raises(CandidateFormatError, match=message):
        extension_from_call(args)


def test_arch_spellings():
    assert [arch_list_entry(a) for a in ("sm_90", "sm_90a", "sm_100", "sm_80")] == ["9.0", "9.0a", "10.0", "8.0"]


@needs_nvcc
def test_ptxas_resource_errors_are_reported_with_a_hint(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void big(float* y) { __shared__ float s[65536];\n"
                                   "  s[threadIdx.x] = 1; __syncthreads(); y[threadIdx.x] = s[threadIdx.x + 1]; }\n"
                                   "__global__ void ok(float* y) { y[threadIdx.x] = 2.0f; }\n")
    run = run_tool([find_nvcc(), "-arch=sm_90", "-c", "k.cu", "-o", "k.o", "-Xptxas", "-v"], tmp_path, 120)
    assert not run.ok
    feedback = CudaBackend().build_failure(BuildJob("0" * 16, "cuda_sources of k", (), ()),
                                           f"nvcc failed (exit {run.returncode}):\n" + run.stderr + run.stdout)
    assert "uses too much shared data (0x40000 bytes, 0xc000 max)" in feedback
    assert "hint: static __shared__ arrays are limited to 48 KB" in feedback
    summary = ptxas_summary(run.stderr)
    assert "big: " in summary and "262144 B static shared memory" in summary


@needs_nvcc
def test_a_compile_error_reaches_the_llm_with_its_line_and_no_private_paths(tmp_path):
    # a preprocessor error stops nvcc before the (slow) torch front-end pass, so this stays fast
    args = {"name": "bad_ext", "cpp_sources": "",
            "cuda_sources": "\n__global__ void k(float* y) { y[0] = 1; }\n#include <no_such_header.cuh>\n"}
    outcome = build_call(CudaBackend(), "load_inline", args, tmp_path, 600)
    assert not outcome.ok and outcome.gate == "compile" and outcome.reason.startswith("nvcc failed")
    assert "bad_ext.cu:6:10: fatal error: no_such_header.cuh: No such file or directory" in outcome.detail
    assert str(tmp_path) not in outcome.detail and "/tmp/evokernel-build" not in outcome.detail
    assert "warning" not in outcome.detail


def test_format_errors_fail_the_compile_gate_without_running_nvcc(tmp_path):
    outcome = build_call(CudaBackend(), "load_inline", {"name": "x", "cpp_sources": ""}, tmp_path, 60)
    assert not outcome.ok and outcome.gate == "compile" and "cuda candidate format: load_inline has no cuda_sources" in outcome.reason


def test_without_a_gpu_availability_says_why():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    availability = CudaBackend().availability()
    assert not availability.available and "no GPU" in availability.reason
    assert [g.gate for g in availability.gates] == ["compile", "correctness", "latency"]
