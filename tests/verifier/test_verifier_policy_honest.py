"""The static policy on honest candidates in everyday styles: small Python snippets (helpers, shape
arithmetic with math/functools/operator/itertools, wrapper classes, parameter containers,
import-time tables, ``super(ModelNew, self)``, lazy builds, self-tests) and whole candidates in
the styles of issue 24 (KernelBench's layout, ATen extensions with AT_DISPATCH/TORCH_CHECK/
at::parallel_for, build helpers that compute flags and sources, several kernels per file, Triton),
plus their C/C++/CUDA sources: nothing is flagged."""

from __future__ import annotations

import pytest
from policy_snippets import ATEN_CPU, CXX_NAMES_C, ELEMENTWISE_CUDA, HEAD, HONEST_STYLES, OMP_PARTIALS_C

from verifier.backends import get_backend
from verifier.gates.hack import static_findings, static_gate
from verifier.gates.hack_native import run_native_checks
from verifier.gates.hack_python import run_python_checks

HONEST = {
    "torch_own_submodules": """
from typing import Optional
WINDOW = torch.signal.windows.hann(8)
SCALAR = Optional[torch.types.Number]
""",
    "empty_view": """
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty(x.numel()).view(x.shape)
        lib.relu(x.contiguous(), y, x.numel())
        return y
""",
    "build_helper": """
from torch.utils.cpp_extension import load_inline
def _build(name, src, fns):
    return load_inline(name=name, cpp_sources=src, functions=fns, extra_cflags=["-O3"])
ext = _build("e", "int f();", ["f"])
class ModelNew(nn.Module):
    def forward(self, x):
        return ext.f(x)
""",
    "build_helper_lib": """
def _build():
    return load_c("void relu(){}", {})
lib2 = _build()
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        lib2.relu(x, y, x.numel())
        return y
""",
    "math_prod": """
class ModelNew(nn.Module):
    def _numel(self, shape):
        return math.prod(shape)
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, y, self._numel(x.shape))
        return y
""",
    "reduce": """
class ModelNew(nn.Module):
    def forward(self, x):
        n = functools.reduce(lambda a, b: a * b, x.shape, 1)
        y = torch.empty_like(x)
        lib.relu(x, y, n)
        return y
""",
    "staticmethod_shape": """
class ModelNew(nn.Module):
    @staticmethod
    def _out_shape(shape):
        dims = list(shape)
        dims.sort()
        return tuple(shape[:-1]) + (shape[-1] * 2,)
    def forward(self, x):
        y = torch.empty(self._out_shape(x.shape))
        lib.relu(x, y, x.numel())
        return y
""",
    "wrapper_class": """
class _Kernel:
    def __init__(self, lib):
        self.lib = lib
    def __call__(self, x):
        y = torch.empty_like(x)
        self.lib.relu(x, y, x.numel())
        return y
    def run(self, x):
        return self(x)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = _Kernel(lib)
    def forward(self, x):
        return self.kernel.run(x.contiguous())
""",
    "linear_conv_params": """
class ModelNew(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.linear = nn.Linear(i, o)
        self.conv = nn.Conv2d(3, 8, 3)
        self.blocks = nn.ModuleList([nn.Linear(o, o) for _ in range(2)])
    def forward(self, x):
        y = torch.empty(x.shape[0], self.linear.out_features)
        w = self.conv.weight.contiguous()
        lib.linear(x, self.linear.weight, self.linear.bias, y, self.conv.kernel_size[0], w)
        for b in self.blocks:
            lib.linear(y, b.weight, b.bias, y)
        return y
""",
    "init_tables": """
def _twiddles(n):
    k = torch.arange(n, dtype=torch.float64)
    return torch.cos(2 * math.pi * k / n).float()
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("tw", _twiddles(64))
        self._init_weights()
    def _init_weights(self):
        self.w = nn.Parameter(torch.randn(4, 4) * 0.1)
        nn.init.kaiming_uniform_(self.w)
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, self.tw, self.w, y)
        return y
""",
    "numpy_init": """
import numpy as np
TABLE = torch.from_numpy(np.cos(np.linspace(0, 1, 16)).astype(np.float32))
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, TABLE, y)
        return y
""",
    "triton_style_grid": """
BLOCK = 1024
class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        grid = lambda meta: ((n + meta["BLOCK"] - 1) // meta["BLOCK"],)
        y = torch.empty_like(x)
        lib.relu(x, y, n, grid({"BLOCK": BLOCK})[0])
        return y
""",
    "lru_cache_ext": """
from torch.utils.cpp_extension import load_inline
@functools.lru_cache(maxsize=None)
def _ext():
    return load_inline(name="e", cpp_sources="int f();", functions=["f"])
class ModelNew(nn.Module):
    def forward(self, x):
        return _ext().f(x)
""",
    "item_scalar": """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1))
    def forward(self, x):
        y = torch.empty_like(x)
        lib.scale(x, y, x.numel(), float(self.alpha.item()))
        return y
""",
    "multi_kernel_dict": """
lib_a = load_c("void a(){}", {})
lib_b = load_c("void b(){}", {})
KERNELS = {"a": lib_a.a, "b": lib_b.b}
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        KERNELS["a" if x.dim() == 2 else "b"](x, y, x.numel())
        return y
""",
    "dataclass_cfg": """
import dataclasses
@dataclasses.dataclass(frozen=True)
class Cfg:
    block: int = 256
    def grid(self, n):
        return (n + self.block - 1) // self.block
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = Cfg()
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel(), self.cfg.grid(x.numel()))
        return y
""",
    "min_max_shapes": """
class ModelNew(nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        lo = torch.empty(rows)
        hi = torch.empty(rows)
        block = min(cols, 64)
        lib.minmax(x, lo, hi, rows, cols, max(block, 1))
        return lo, hi
""",
    "reset_parameters": """
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, n))
        self.weight_norm = 3
        self.reset_parameters()
    def reset_parameters(self):
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, self.weight, y, self.weight_norm)
        return y
""",
    "list_append_sort": """
class ModelNew(nn.Module):
    def forward(self, x):
        dims = []
        for d in x.shape:
            dims.append(d)
        dims.sort()
        y = torch.empty_like(x)
        lib.relu(x, y, dims[0])
        return y
""",
    "kernelbench_cuda": """
from torch.utils.cpp_extension import load_inline
src = "torch::Tensor mm(torch::Tensor a, torch::Tensor b) { return a; }"
cpp = "torch::Tensor mm(torch::Tensor a, torch::Tensor b);"
matmul = load_inline(name="matmul", cpp_sources=cpp, cuda_sources=src, functions=["mm"], verbose=True, extra_cflags=[""], extra_ldflags=[""])
class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.matmul = matmul
    def forward(self, A, B):
        return self.matmul.mm(A.contiguous(), B.contiguous())
""",
    "conv_params_forward_helper": """
class ModelNew(nn.Module):
    def __init__(self, cin, cout, k, stride=1, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=stride, padding=padding, bias=False)
        self.stride = stride
        self.padding = padding
    def _out_hw(self, h, w):
        k = self.conv.kernel_size[0]
        return ((h + 2 * self.padding - k) // self.stride + 1, (w + 2 * self.padding - k) // self.stride + 1)
    def forward(self, x):
        n, c, h, w = x.shape
        oh, ow = self._out_hw(h, w)
        y = x.new_empty((n, self.conv.out_channels, oh, ow))
        lib.conv(x.contiguous(), self.conv.weight.contiguous(), y, n, c, h, w, oh, ow)
        return y
""",
    "super_named_init_precomputes": """
import numpy as np
class ModelNew(nn.Module):
    def __init__(self, n):
        super(ModelNew, self).__init__()
        self.norm = nn.LayerNorm(n)
        self.lin = nn.Linear(n, n)
        self.w = nn.Parameter(torch.randn(n, n))
        self.packed = torch.from_numpy(np.ascontiguousarray(self.lin.weight.detach().numpy().T))
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, self.packed, self.norm.weight, y)
        return y
""",
    "threads_and_shape_utilities": """
import operator
import itertools
class ModelNew(nn.Module):
    def forward(self, x):
        chunks = max(1, torch.get_num_threads())
        n = functools.reduce(operator.mul, x.shape, 1)
        strides = list(itertools.accumulate(reversed(x.shape), operator.mul))
        ok = x.is_contiguous() and x.dim() == 2 and x.stride(-1) == 1 and x.dtype == torch.float32
        y = torch.empty(x.size(), dtype=x.dtype, device=x.device)
        lib.relu(x if ok else x.contiguous(), y, n, chunks, strides[-1])
        return y
""",
    "enum_of_kernels": """
import enum
class Op(enum.Enum):
    RELU = 1
    COPY = 2
class ModelNew(nn.Module):
    def __init__(self, op=Op.RELU):
        super().__init__()
        self.op = op
    def forward(self, x):
        y = torch.empty_like(x)
        (lib.relu if self.op is Op.RELU else lib.copy)(x.contiguous(), y, x.numel())
        return y
""",
    "lazy_global_build_and_constant_getattr": """
from torch.utils.cpp_extension import load_inline
_EXT = None
def _ext():
    global _EXT
    if _EXT is None:
        _EXT = load_inline(name="e", cpp_sources="int f();", functions=["f"])
    return _EXT
class ModelNew(nn.Module):
    def __init__(self, bias=True):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(4)) if bias else None
    def forward(self, x):
        b = getattr(self, "bias", None)
        return _ext().f(x, b if b is not None else torch.zeros(4))
""",
    "autograd_function_and_cuda_queries": """
from typing import Optional
import torch.nn.init as init
from torch.nn.modules.utils import _pair
from collections.abc import Sequence
class _Relu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
class ModelNew(nn.Module):
    def __init__(self, k: "int | Sequence[int]" = 3, dev: Optional["torch.device"] = None):
        super().__init__()
        self.k = _pair(k)
        self.w = nn.Parameter(torch.empty(4, 4))
        init.xavier_uniform_(self.w)
        self.use_cuda = torch.cuda.is_available() and torch.backends.cudnn.is_available()
    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        if self.use_cuda:
            torch.cuda.synchronize()
        return _Relu.apply(x.contiguous())
""",
    "main_function_self_test": """
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
def _reference(x):
    import numpy as np
    return torch.from_numpy(np.maximum(x.numpy(), 0))
def main():
    import argparse, time
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=64)
    x = torch.randn(parser.parse_args().n)
    t = time.perf_counter()
    print(torch.allclose(ModelNew()(x), _reference(x)), time.perf_counter() - t)
if __name__ == "__main__":
    main()
""",
    "reference_copy_and_self_test": """
class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
    def forward(self, x):
        return torch.relu(x)
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
def get_inputs():
    return [torch.randn(16, 16)]
def get_init_inputs():
    return []
if __name__ == "__main__":
    import sys, time
    torch.manual_seed(42)
    (x,) = get_inputs()
    t = time.perf_counter()
    assert torch.allclose(ModelNew()(x), Model()(x)), sys.exit(1)
    print(time.perf_counter() - t)
""",
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_code_passes(name):
    findings = run_python_checks(HEAD + HONEST[name])
    assert findings == [], [f.line_text() for f in findings]


def test_triton_kernels_and_launches_pass_with_the_backend_imports():
    source = """import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
        relu_kernel[grid](x, y, n, BLOCK=BLOCK)
        return y
"""
    assert static_gate(source, "float32", (), frozenset({"triton", "triton.language"})).passed


@pytest.mark.parametrize("name", sorted(HONEST_STYLES))
def test_issue_styles_pass_the_static_policy(name):
    backend, source = HONEST_STYLES[name]
    findings = static_findings(source, "float32", (), get_backend(backend).static_imports)
    assert findings == [], [f.line_text() for f in findings]


@pytest.mark.parametrize("code, language", [(ATEN_CPU, "c++"), (OMP_PARTIALS_C, "c++"), (CXX_NAMES_C, "c++"),
                                            (ELEMENTWISE_CUDA, "cuda")], ids=["aten", "omp_avx", "cxx_names", "cuda"])
def test_native_styles_pass_the_text_checks(code, language):
    assert run_native_checks(code, "float32", (), language) == []


def test_inline_ptx_in_device_code_passes_and_host_assembly_does_not():
    cuda = ("__device__ __forceinline__ unsigned lane() { unsigned r; asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r)); "
            "return r; }\ntemplate <int N> __global__ void k(float* y) { asm(\"bar.sync 0;\"); y[lane()] = N; }\n"
            "auto l = [] __device__ (int i) { asm(\"nop;\"); return i; };\n")
    assert run_native_checks(cuda, "float32", (), "cuda") == []
    host = cuda + "void host() { asm volatile(\"syscall\"); }\n__host__ __device__ void both() { asm(\"nop\"); }\n"
    lines = [f.line for f in run_native_checks(host, "float32", (), "cuda")]
    assert lines == [4, 5]
    assert len(run_native_checks(cuda, "float32", (), "c++")) == 3  # g++ compiles __device__ bodies for the host
    redefined = "#define __device__\n" + cuda
    assert run_native_checks(redefined, "float32", (), "cuda")


def test_a_load_inline_candidates_cuda_sources_may_hold_ptx_its_cpp_sources_no_assembly():
    """As the monitor checks a recorded load_inline call (verifier.monitor.builds): cuda_sources as CUDA,
    cpp_sources as C++."""
    cu = """
__device__ unsigned lane() { unsigned r; asm volatile("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }
__global__ void k(float* y) { y[lane()] = 1; }
torch::Tensor f(torch::Tensor x) { k<<<1, 32>>>(x.data_ptr<float>()); return x; }
"""
    assert run_native_checks(cu, "float32", (), "cuda") == []
    assert [f.check for f in run_native_checks("void g() { asm(\"nop\"); }\n", "float32", (), "c++")] == \
        ["c_inline_asm_and_load_hooks"]
