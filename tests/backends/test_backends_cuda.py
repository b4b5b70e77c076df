"""CUDA backend without a GPU: static extraction of load_inline sources, real nvcc compiles."""

from __future__ import annotations

import pytest

from verifier.backends.cuda import CudaBackend, _failure_feedback, arch_list_entry, find_nvcc, ptxas_summary
from verifier.backends.cuda_sources import CandidateFormatError, extract_inline_extensions
from verifier.backends.scaffolds import fenced_blocks, scaffold_sections
from verifier.backends.toolrun import run_tool

needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc (CUDA toolkit) is not installed")


def scaffold_example() -> str:
    return fenced_blocks(dict(scaffold_sections("cuda"))["Worked example: ReLU"], "python")[0]


def test_sources_are_read_statically_through_names_lists_and_concatenation():
    source = ('from torch.utils.cpp_extension import load_inline\nA = "__global__ void k() {}"\n'
              'B = A + "\\n// more"\nDECL = ["torch::Tensor f(torch::Tensor x);"]\n'
              'ext = load_inline("my_ext", DECL, cuda_sources=[B], functions=["f"])\n'
              'raise SystemExit("never executed")\n')
    (ext,) = extract_inline_extensions(source)
    assert ext.name == "my_ext" and ext.functions == ("f",)
    assert ext.cuda_sources == "__global__ void k() {}\n// more"
    assert ext.cuda_unit().startswith("#include <torch/types.h>")
    assert 'm.def("f", torch::wrap_pybind_function(f), "f");' in ext.cpp_unit()


@pytest.mark.parametrize("source, message", [
    ("import torch\nclass ModelNew: pass\n", "no torch.utils.cpp_extension.load_inline"),
    ("load_inline(name='x', cpp_sources='', cuda_sources=make())\n", "cuda_sources must be a string literal"),
    ("load_inline(name='x', cpp_sources='int f();')\n", "no cuda_sources"),
    ("load_inline(name='x', cuda_sources='a', functions=names())\n", "functions= must be a list"),
    ("def f(:\n", "syntax error"),
])
def test_unsupported_candidates_say_what_to_change(source, message):
    with pytest.raises(CandidateFormatError, match=message):
        extract_inline_extensions(source)


def test_arch_spellings():
    assert [arch_list_entry(a) for a in ("sm_90", "sm_90a", "sm_100", "sm_80")] == ["9.0", "9.0a", "10.0", "8.0"]


@needs_nvcc
def test_ptxas_resource_errors_are_reported_with_a_hint(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void big(float* y) { __shared__ float s[65536];\n"
                                   "  s[threadIdx.x] = 1; __syncthreads(); y[threadIdx.x] = s[threadIdx.x + 1]; }\n"
                                   "__global__ void ok(float* y) { y[threadIdx.x] = 2.0f; }\n")
    run = run_tool([find_nvcc(), "-arch=sm_90", "-c", "k.cu", "-o", "k.o", "-Xptxas", "-v"], tmp_path, 120)
    assert not run.ok
    feedback = _failure_feedback([run], tmp_path)
    assert "uses too much shared data (0x40000 bytes, 0xc000 max)" in feedback
    assert "hint: static __shared__ arrays are limited to 48 KB" in feedback
    summary = ptxas_summary(run.stderr)
    assert "big: " in summary and "262144 B static shared memory" in summary


@needs_nvcc
def test_a_compile_error_reaches_the_llm_with_its_line_and_no_private_paths(tmp_path):
    # a preprocessor error stops nvcc before the (slow) torch front-end pass, so this stays fast
    source = ('from torch.utils.cpp_extension import load_inline\n'
              'SRC = """\n__global__ void k(float* y) { y[0] = 1; }\n#include "no_such_header.cuh"\n"""\n'
              'ext = load_inline(name="bad_ext", cpp_sources="", cuda_sources=SRC)\n')
    outcome = CudaBackend().compile(source, tmp_path, 600)
    assert not outcome.ok and outcome.diagnostics.startswith("nvcc failed")
    assert "bad_ext_0.cu:6:10: fatal error: no_such_header.cuh: No such file or directory" in outcome.diagnostics
    assert str(tmp_path) not in outcome.diagnostics and "warning" not in outcome.diagnostics


def test_format_errors_fail_the_compile_gate_without_running_nvcc(tmp_path):
    outcome = CudaBackend().compile("class ModelNew: pass\n", tmp_path, 60)
    assert not outcome.ok and outcome.diagnostics.startswith("cuda candidate format: no torch.utils")


def test_without_a_gpu_load_refuses_and_availability_says_why(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    availability = CudaBackend().availability()
    assert not availability.available and "no GPU" in availability.reason
    assert [g.gate for g in availability.gates] == ["compile", "correctness", "latency"]
    with pytest.raises(RuntimeError, match="need a GPU"):
        CudaBackend().load(scaffold_example(), tmp_path)
