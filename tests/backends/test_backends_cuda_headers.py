"""torch's CUDA headers for the cuda compile gate on a CPU build of torch (verifier.backends.cuda_headers):
the fetch from a wheel (a small real zip here; the real one is ~530 MB), which headers a source
gets, the verdict without fetched headers (real sandbox), and, where the headers were fetched on
this machine, nvcc on KernelBench-layout sources through them."""

from __future__ import annotations

import hashlib
import re
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from cli.main import app
from verifier.api import verify
from verifier.backends import cuda_headers
from verifier.backends.cuda import find_nvcc, nvcc_command, target_arch
from verifier.backends.toolrun import run_tool
from verifier.gate_plan import is_unavailable
from verifier.settings import VerifySettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verifier"))
from verifier_taskutil import TASKS, make_task  # noqa: E402

needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc (CUDA toolkit) is not installed")
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: its torch has the headers")
FETCHED = cuda_headers.installed() if find_nvcc() else None
needs_fetched = pytest.mark.skipif(FETCHED is None, reason=f"no fetched CUDA headers (`{cuda_headers.FETCH_COMMAND}`)")
VERSION = cuda_headers.local_torch_version()

KERNELBENCH_LAYOUT = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""
relu_ext = load_inline(name="relu_ext", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                       cuda_sources=cuda_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def forward(self, x):
        return relu_ext.relu_cuda(x)
'''


def _wheel(path: Path, version: str = f"{VERSION}+cu130", cuda: str | None = "13.0", macros: bool = True) -> Path:
    """A wheel-shaped zip with a torch/include tree and torch/version.py as real wheels have them."""
    with zipfile.ZipFile(path, "w") as zf:
        cuda_line = f"cuda: Optional[str] = '{cuda}'" if cuda else "cuda: Optional[str] = None"
        zf.writestr("torch/version.py", f"__version__ = '{version}'\n{cuda_line}\n")
        zf.writestr("torch/include/ATen/cuda/CUDAContext.h", "#pragma once\n")
        zf.writestr("torch/include/torch/csrc/api/include/torch/all.h", "#pragma once\n")
        if macros:
            zf.writestr(f"torch/include/{cuda_headers._CUDA_ONLY}", "#define C10_CUDA_BUILD_SHARED_LIBS\n")
        zf.writestr("torch/lib/libtorch_cuda.so", b"\0" * 64)  # not kept
    return path


def _toolkit(root: Path, math_headers: bool) -> str:
    """A toolkit layout (bin/nvcc, include/) for the math-header probe; nothing here is executed."""
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "bin" / "nvcc").write_text("")
    if math_headers:
        (root / "include" / "cublas_v2.h").write_text("")
    return str(root / "bin" / "nvcc")


def test_fetch_keeps_only_torch_include_with_a_manifest(tmp_path):
    wheel = _wheel(tmp_path / "torch-x.whl")
    lines: list[str] = []
    tree = cuda_headers.fetch(progress=lines.append, wheel=wheel, root=tmp_path / "cache")
    assert tree == cuda_headers.installed(root=tmp_path / "cache")
    assert (tree.torch_version, tree.cuda_version) == (f"{VERSION}+cu130", "13.0")
    assert tree.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    kept = sorted(str(p.relative_to(tree.root)) for p in tree.root.rglob("*") if p.is_file())
    assert kept == ["include/ATen/cuda/CUDAContext.h", f"include/{cuda_headers._CUDA_ONLY}",
                    "include/torch/csrc/api/include/torch/all.h", "manifest.json"]
    assert tree.include_dirs() == [tree.include, tree.include / "torch" / "csrc" / "api" / "include"]
    assert lines[-1].startswith(f"fetched torch {VERSION}+cu130 headers")
    again = cuda_headers.fetch(progress=lines.append, wheel=wheel, root=tmp_path / "cache")
    assert again == tree and lines[-1].startswith("already fetched")


@pytest.mark.parametrize("kwargs, message", [
    ({"cuda": None, "macros": False}, "is not a CUDA build of torch"),
    ({"version": "2.1.0+cu121"}, f"is torch 2.1.0+cu121, the local torch is {VERSION}"),
])
def test_a_wrong_wheel_is_refused_in_one_line_and_nothing_is_installed(tmp_path, kwargs, message):
    wheel = _wheel(tmp_path / "torch-x.whl", **kwargs)
    with pytest.raises(cuda_headers.HeaderFetchError, match=re.escape(message)):
        cuda_headers.fetch(wheel=wheel, root=tmp_path / "cache")
    assert cuda_headers.installed(root=tmp_path / "cache") is None
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # the staging folder is gone


def test_the_cli_fetches_into_the_user_cache_and_reports_bad_wheels(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    runner = CliRunner()
    result = runner.invoke(app, ["toolchain", "fetch-cuda-headers", "--wheel", str(_wheel(tmp_path / "ok.whl"))])
    assert result.exit_code == 0, result.output
    root = tmp_path / "xdg" / "evokernel" / "cuda-headers"
    assert f"headers in {root / f'torch-{VERSION}' / 'include'}" in result.output
    bad = runner.invoke(app, ["toolchain", "fetch-cuda-headers", "--force", "--wheel",
                              str(_wheel(tmp_path / "cpu.whl", cuda=None, macros=False))])
    assert bad.exit_code != 0 and "cpu.whl is not a CUDA build of torch" in bad.output
    assert cuda_headers.installed(root=root) is not None  # the earlier fetch is untouched


def test_which_headers_a_source_gets(tmp_path):
    assert cuda_headers.needs_cuda_torch('#include "c10/cuda/CUDAGuard.h"\n')
    assert cuda_headers.needs_cuda_torch("  #  include <ATen/cuda/CUDAContext.h>\n")
    assert not cuda_headers.needs_cuda_torch("// like <ATen/cuda/CUDAContext.h>\n#include <cuda_runtime.h>\n")
    plain = cuda_headers.choose(["#include <torch/extension.h>\n"], "nvcc", None)
    assert plain == cuda_headers.HeaderChoice((), (), "")
    kernelbench = ["#include <ATen/cuda/CUDAContext.h>\n"]
    missing = cuda_headers.choose(kernelbench, "nvcc", None)
    assert missing.unavailable.startswith("compile unavailable here: the source includes torch's CUDA headers")
    assert f"run `{cuda_headers.FETCH_COMMAND}` once" in missing.unavailable
    tree = cuda_headers.fetch(wheel=_wheel(tmp_path / "t.whl"), root=tmp_path / "cache")
    full = cuda_headers.choose(kernelbench, _toolkit(tmp_path / "full", True), tree)
    assert full.include_dirs == tuple(tree.include_dirs()) and full.after_dirs == ()
    assert full.note == f"headers: torch {VERSION}+cu130 CUDA include tree (fetched by `{cuda_headers.FETCH_COMMAND}`)"
    bare = cuda_headers.choose(kernelbench, _toolkit(tmp_path / "bare", False), tree)
    assert bare.after_dirs == (cuda_headers.STUB_DIR,) and "declarations from the compile-gate stub" in bare.note
    assert len({plain.key, full.key, bare.key}) == 3  # the compile cache tells the builds apart


@no_gpu
@needs_nvcc
def test_without_fetched_headers_the_compile_gate_is_unavailable_not_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))  # read by the parent, passed to the child
    verdict = verify(make_task((TASKS / "relu.py").read_text(), "L1/relu"), KERNELBENCH_LAYOUT, "cuda",
                     VerifySettings.for_tests(tmp_path / "cache"))
    assert not verdict.infrastructure_error, verdict.infrastructure_error
    compile_gate = verdict.gate("compile")
    assert is_unavailable(compile_gate), compile_gate.reason
    assert cuda_headers.FETCH_COMMAND in compile_gate.reason


@needs_fetched
def test_the_fetched_tree_and_the_stub_resolve_every_include_of_torch_cuda_headers(tmp_path):
    # the preprocessor alone (seconds): every header torch's CUDAContext.h pulls in must be found
    nvcc = find_nvcc()
    headers = cuda_headers.choose(["#include <ATen/cuda/CUDAContext.h>"], nvcc, FETCHED)
    (tmp_path / "unit.cu").write_text("#include <torch/extension.h>\n#include <c10/cuda/CUDAStream.h>\n"
                                      "#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n")
    run = run_tool(nvcc_command(nvcc, target_arch(), "unit.cu", "-DTORCH_EXTENSION_NAME=unit", headers,
                                ("-E", "-o", "unit.ii")), tmp_path, 600)
    assert run.ok, run.stderr[-2000:]
    text = (tmp_path / "unit.ii").read_text(errors="replace")
    assert "getCurrentCUDAStream" in text and "cublasHandle_t" in text


# The full compile through the fetched tree, in the sandbox, with the verdict naming the headers, is the
# corpus entry honest_cuda_stream_header (tests/verifier/test_verifier_corpus.py): one nvcc run, not two.
