"""Candidates for the static policy's tests.

HEAD: the prelude of the small Python snippets (imports and the native library every one uses).
RUNTIME_OBSERVED: torch compute reached through helpers, aliases, tables, hooks and wrappers: not
refused by the static policy any more, observed by the runner (test_verifier_policy_runtime runs
each under the sandbox's ATen observer). HONEST_STYLES: whole candidates in the styles real
solutions use (issue 24), per backend; NATIVE_HONEST: C/C++/CUDA sources in those styles.
"""

HEAD = """import math
import functools
import torch
import torch.nn as nn
import torch.nn.functional as F
from verifier.cpu_native import load_c
lib = load_c("void relu(){}", {})
"""

RUNTIME_HEAD = "\n".join(line for line in HEAD.splitlines() if "load_c" not in line) + "\n"

# name -> body; each forward computes with torch in a way names do not show.
RUNTIME_OBSERVED = {
    "alias_self": """
def _impl(t):
    return t.clamp(min=0)
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.impl = _impl
    def forward(self, x):
        return self.impl(x)
""",
    "dispatch_torch": """
OPS = [torch.relu]
class ModelNew(nn.Module):
    def forward(self, x):
        return OPS[0](x)
""",
    "classmethod": """
class ModelNew(nn.Module):
    @classmethod
    def _act(cls, t):
        return torch.sigmoid(t)
    def forward(self, x):
        return ModelNew._act(x)
""",
    "decorator_factory": """
def deco(n):
    def inner(f):
        def wrapper(*a):
            return F.gelu(f(*a))
        return wrapper
    return inner
@deco(3)
def _k(t):
    return t
class ModelNew(nn.Module):
    def forward(self, x):
        return _k(x)
""",
    "super_forward": """
class ModelNew(nn.ReLU):
    def forward(self, x):
        return super().forward(x)
""",
    "lambda_init": """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = lambda t: t.clamp(min=0)
    def forward(self, x):
        return self.act(x)
""",
    "partial": """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = functools.partial(torch.clamp, min=0)
    def forward(self, x):
        return self.act(x)
""",
    "from_import": """
from torch import relu as r
class ModelNew(nn.Module):
    def forward(self, x):
        return r(x)
""",
    "default_arg": """
class ModelNew(nn.Module):
    def forward(self, x, act=torch.relu):
        return act(x)
""",
    "add_module": """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module("act", nn.ReLU())
    def forward(self, x):
        return self.act(x)
""",
    "nn_linear_called": """
class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()
        self.lin = nn.Linear(4, 4)
    def forward(self, x):
        return self.lin(x)
""",
    "instance_made_in_forward": """
class K:
    def __init__(self, t):
        self.t = torch.relu(t)
class ModelNew(nn.Module):
    def forward(self, x):
        return K(x).t
""",
    "nested_def": """
class ModelNew(nn.Module):
    def forward(self, x):
        def inner(t):
            return t.exp()
        return inner(x)
""",
    "unknown_receiver": """
def _h(t):
    return t.sum()
HANDLERS = [_h]
class ModelNew(nn.Module):
    def forward(self, x):
        return HANDLERS[0](x)
""",
    "bound_method_value": """
class ModelNew(nn.Module):
    def forward(self, x):
        f = x.relu
        return f()
""",
    "reduce_torch": """
class ModelNew(nn.Module):
    def forward(self, x):
        return functools.reduce(torch.add, [x, x])
""",
    "class_attr_forward": """
class ModelNew(nn.Module):
    forward = staticmethod(torch.relu)
""",
    "dunder_op": """
class W:
    def __init__(self, t):
        self.t = t
    def __add__(self, o):
        return torch.add(self.t, o)
class ModelNew(nn.Module):
    def forward(self, x):
        return W(x) + 1
""",
    "lambda_returned_by_min": """
ACT = min(lambda t: torch.relu(t), lambda t: t, key=lambda f: 0)
class ModelNew(nn.Module):
    def forward(self, x):
        return ACT(x)
""",
    "inplace_method": """
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        y.copy_(x)
        return y.relu_()
""",
    "rng_in_forward": """
class ModelNew(nn.Module):
    def forward(self, x):
        return x + 0 * torch.rand_like(x)
""",
    "fallback_branch_taken": """
class ModelNew(nn.Module):
    def forward(self, x):
        if x.dim() > 8:
            return x
        return torch.maximum(x, torch.zeros_like(x))
""",
}

# -- honest candidates in everyday styles --------------------------------------------------------

ELEMENTWISE_CUDA = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void elementwise_add_kernel(const float* a, const float* b, float* out, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        out[idx] = a[idx] + b[idx];
    }
}

torch::Tensor elementwise_add_cuda(torch::Tensor a, torch::Tensor b) {
    auto size = a.numel();
    auto out = torch::zeros_like(a);
    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;
    elementwise_add_kernel<<<num_blocks, block_size>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                       out.data_ptr<float>(), size);
    return out;
}
"""

ATEN_CPU = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <thread>
#include <vector>
#include <cmath>

#define CHECK_INPUT(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")

struct OnlineSoftmax {
    float m = -INFINITY, s = 0.f;
    void add(float v) { float nm = std::max(m, v); s = s * std::exp(m - nm) + std::exp(v - nm); m = nm; }
    float sum() const { return s; }
    float max() const { return m; }
};

template <typename scalar_t>
static void relu_kernel(const scalar_t* in, scalar_t* out, int64_t n) {
    at::parallel_for(0, n, 2048, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = in[i] > scalar_t(0) ? in[i] : scalar_t(0);
    });
}

torch::Tensor relu_fwd(torch::Tensor x) {
    CHECK_INPUT(x);
    TORCH_CHECK(x.dim() >= 1, "x must have a dimension");
    auto xc = x.contiguous().clone();
    auto y = torch::empty_like(xc);
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "relu_fwd", [&] {
        relu_kernel<scalar_t>(xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), xc.numel());
    });
    return y;
}

torch::Tensor softmax_rows(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const float* p = x.data_ptr<float>();
    float* q = y.data_ptr<float>();
    const int64_t rows = x.size(0), cols = x.size(1);
    const unsigned hw = std::thread::hardware_concurrency();
    std::vector<float> partial(hw ? hw : 1);
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        OnlineSoftmax acc;
        for (int64_t c = 0; c < cols; ++c) acc.add(p[r * cols + c]);
        for (int64_t c = 0; c < cols; ++c) q[r * cols + c] = std::exp(p[r * cols + c] - acc.max()) / acc.sum();
    }
    return y;
}
"""

OMP_PARTIALS_C = r"""
#include <omp.h>
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>

typedef struct { float sum; float max; } Stats;

static inline float hsum256(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_hadd_ps(lo, lo);
    lo = _mm_hadd_ps(lo, lo);
    return _mm_cvtss_f32(lo);
}

extern "C" void row_sums(const float* x, float* out, long rows, long cols) {
    int threads = omp_get_max_threads();
    float* partial = (float*)calloc((size_t)threads, sizeof(float));
    double total = 0.0;
    #pragma omp parallel num_threads(threads) reduction(+:total)
    {
        int t = omp_get_thread_num();
        #pragma omp for schedule(static)
        for (long r = 0; r < rows; ++r) {
            __m256 acc = _mm256_setzero_ps();
            long c = 0;
            for (; c + 8 <= cols; c += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * cols + c), _mm256_set1_ps(1.0f), acc);
            float s = hsum256(acc);
            for (; c < cols; ++c) s += x[r * cols + c];
#ifdef __AVX512F__
            s += _mm512_reduce_add_ps(_mm512_setzero_ps());
#endif
            out[r] = s;
            partial[t] += s;
            total += s;
        }
    }
    free(partial);
    (void)total;
}
"""

CXX_NAMES_C = r"""
#include <algorithm>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>
#include <cstdio>

struct Tile {
    std::vector<float> data;
    Tile clone() const { return *this; }
    float read(int i) const { return data[i]; }
    void write(int i, float v) { data[i] = v; }
    void add(float v) { for (auto& d : data) d += v; }
    float sum() const { return std::accumulate(data.begin(), data.end(), 0.0f); }
    void open() {}
    void kill() {}
};

template <typename T, int N>
static T dot(const T* a, const T* b) { T s = T(0); for (int i = 0; i < N; ++i) s += a[i] * b[i]; return s; }

extern "C" void scale_add(const float* x, float* y, long n, float alpha) {
    long time = 0, clock = 0, random = n;  // names, not calls
    unsigned hw = std::thread::hardware_concurrency();
    auto op = [alpha](float v) { return v * alpha; };
    std::function<float(float)> f = op;
    Tile t{std::vector<float>(4, 1.0f)};
    Tile u = t.clone();
    u.add(1.0f);
    u.write(0, u.read(1) + u.sum());
    for (long i = 0; i < n; ++i) y[i] = f(x[i]) + dot<float, 1>(x + i, x + i) * 0.0f;
    if (hw == 0 && time + clock + random < 0) std::printf("%ld\n", n);
}
"""

# name -> (backend, candidate source). Each must pass the static policy (issue 24's styles).
HONEST_STYLES = {
    "kernelbench_solution_layout": ("cuda", '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

elementwise_add_source = """''' + ELEMENTWISE_CUDA + '''"""
elementwise_add_cpp_source = "torch::Tensor elementwise_add_cuda(torch::Tensor a, torch::Tensor b);"

elementwise_add = load_inline(
    name="elementwise_add",
    cpp_sources=elementwise_add_cpp_source,
    cuda_sources=elementwise_add_source,
    functions=["elementwise_add_cuda"],
    verbose=True,
    extra_cflags=[""],
    extra_ldflags=[""],
)


class Model(nn.Module):
    def __init__(self) -> None:
        super(Model, self).__init__()

    def forward(self, a, b):
        return a + b


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super(ModelNew, self).__init__()
        self.elementwise_add = elementwise_add

    def forward(self, a, b):
        return self.elementwise_add.elementwise_add_cuda(a, b)


def get_inputs():
    a = torch.randn(1, 128).cuda()
    b = torch.randn(1, 128).cuda()
    return [a, b]


def get_init_inputs():
    return []


if __name__ == "__main__":
    import time
    torch.manual_seed(0)
    a, b = get_inputs()
    ref = Model()(a, b)
    start = time.perf_counter()
    out = ModelNew()(a, b)
    torch.cuda.synchronize()
    print(torch.allclose(out, ref), time.perf_counter() - start)
'''),
    "aten_extension_cpu": ("cpu", '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""''' + ATEN_CPU + '''"""

ext = load_inline(name="relu_softmax", cpp_sources=CPP, functions=["relu_fwd", "softmax_rows"],
                  extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return ext.softmax_rows(ext.relu_fwd(x.contiguous()))
'''),
    "super_named_layernorm_gemm": ("cpu", '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SRC = """
extern "C" void gemm_ln(const float* x, const float* w, const float* b, const float* g,
                        const float* beta, float* y, long n, long k, long m) { }
"""
lib = load_c(SRC, {"gemm_ln": "const float*, const float*, const float*, const float*, const float*, float*, "
                              "int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)
        self.scale = nn.Parameter(torch.randn(out_features) * 0.02)
        self.register_buffer("eye", torch.eye(4))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape[0], self.gemm.out_features, dtype=x.dtype)
        lib.gemm_ln(x, self.gemm.weight, self.gemm.bias, self.norm.weight, self.norm.bias, y,
                    x.shape[0], x.shape[1], self.gemm.out_features)
        return y
'''),
    "build_helper_computes_flags_and_sources": ("cpu", '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

TEMPLATE = """
#include <torch/extension.h>
torch::Tensor scale(torch::Tensor x) {{
    auto y = torch::empty_like(x);
    const float* p = x.data_ptr<float>();
    float* q = y.data_ptr<float>();
    #pragma omp parallel for
    for (int64_t i = 0; i < x.numel(); ++i) q[i] = p[i] * {factor}f;
    return y;
}}
"""


def _flags(omp=True, fast=False):
    fl = ["-O3"] + (["-fopenmp"] if omp else [])
    if fast:
        fl += ["-march=native"]
    return fl


def _build(name, factor, **opts):
    source = TEMPLATE.format(factor=factor)
    return load_inline(name=name, cpp_sources=source, functions=["scale"],
                       extra_cflags=_flags(**opts), extra_ldflags=["-fopenmp"] if opts.get("omp", True) else [])


ext = _build(f"scale_{2}", 2.0, omp=True, fast=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scale(x.contiguous())
'''),
    "operator_itertools_functools": ("cpu", '''import functools
import itertools
import operator
from collections import OrderedDict, namedtuple
import torch
import torch.nn as nn
from verifier.cpu_native import load_c

lib = load_c("extern \\"C\\" void k(const float* x, float* y, long n, long c) {}", {"k": "const float*, float*, int64, int64"})
Tile = namedtuple("Tile", "rows cols")
TILES = [Tile(r, c) for r, c in itertools.product((16, 32), (64, 128))]
OFFSETS = list(itertools.accumulate([1, 2, 3], operator.add))
STAGES = OrderedDict(relu=0, scale=1)


class ModelNew(nn.Module):
    def forward(self, x):
        n = functools.reduce(operator.mul, x.shape, 1)
        tile = max(TILES, key=operator.attrgetter("rows"))
        last = operator.itemgetter(-1)(x.shape)
        chunks = torch.get_num_threads()
        y = torch.empty_like(x)
        lib.k(x.contiguous(), y, n, min(last, tile.cols * chunks))
        return y
'''),
    "several_kernels_self_test": ("cpu", '''import math
import torch
import torch.nn as nn
from verifier.cpu_native import load_c

RELU = """extern "C" void relu(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0; }"""
SCALE = """extern "C" void scale(float* y, long n, float a) { for (long i = 0; i < n; ++i) y[i] *= a; }"""
relu_lib = load_c(RELU, {"relu": "const float*, float*, int64"})
scale_lib = load_c(SCALE, {"scale": "float*, int64, float32"})
KERNELS = {"relu": relu_lib.relu, "scale": scale_lib.scale}


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.0):
        super(ModelNew, self).__init__()
        self.alpha = alpha
        self.bias = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        KERNELS["relu"](x, y, x.numel())
        if getattr(self, "bias", None) is None:
            KERNELS["scale"](y, y.numel(), float(self.alpha) / math.sqrt(1.0))
        return y


if __name__ == "__main__":
    import time
    torch.manual_seed(0)
    x = torch.randn(64, 64)
    start = time.perf_counter()
    out = ModelNew()(x)
    ref = torch.relu(x) * 2.0
    assert torch.allclose(out, ref)
    print(f"ok in {time.perf_counter() - start:.4f}s")
'''),
    "numpy_tables_lazy_global_autograd_function": ("cpu", '''from typing import Optional
import numpy as np
import torch
import torch.nn as nn
import torch.nn.init as init
from torch.nn.modules.utils import _pair
from torch.utils.cpp_extension import load_inline

_EXT = None


def _ext():
    global _EXT
    if _EXT is None:
        _EXT = load_inline(name="conv_ext", cpp_sources="torch::Tensor conv(torch::Tensor x, torch::Tensor w);",
                           functions=["conv"])
    return _EXT


class _ConvFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        return _ext().conv(x, w)


class ModelNew(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, bias: Optional[bool] = False) -> None:
        super(ModelNew, self).__init__()
        self.kernel_size = _pair(k)
        self.weight = nn.Parameter(torch.empty(cout, cin, *self.kernel_size))
        init.kaiming_uniform_(self.weight, a=np.sqrt(5))
        table = np.cos(np.linspace(0.0, np.pi, 16)).astype(np.float32)
        self.register_buffer("table", torch.from_numpy(table))
        self.cfg: "Optional[dict[str, int]]" = None

    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        n = int(np.prod(x.shape))
        device = "cuda" if torch.cuda.is_available() else "cpu"
        assert n > 0 and x.device.type == device
        return _ConvFn.apply(x.contiguous(), self.weight)
'''),
    "triton_super_named": ("triton", '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n"])
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int = 16):
        super(ModelNew, self).__init__()
        self.norm = nn.LayerNorm(features)
        self.proj = nn.Linear(features, features)
        self.noise = torch.randn(features)

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        stream = torch.cuda.current_stream() if torch.cuda.is_available() else None
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
        relu_kernel[grid](x, y, n)
        return y
'''),
}
