import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
// x / (1 + expf(-2u)) with libm's expf under "omp simd": without -ffast-math GCC keeps one scalar
// expf call per element, so the lanes serialise on it.
extern "C" void gelu_tanh(const float* __restrict x, float* __restrict y, long n) {
    #pragma omp parallel for simd schedule(static) if(n >= 32768)
    for (long i = 0; i < n; ++i) {
        float v = x[i];
        float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = v / (1.0f + expf(-2.0f * u));
    }
}
'''

lib = load_c(SOURCE, {"gelu_tanh": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.gelu_tanh(x, y, x.numel())
        return y
