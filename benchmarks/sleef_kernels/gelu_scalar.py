import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <math.h>
// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
extern "C" void gelu(const float* x, float* y, long n) {
    const float k = 0.7978845608028654f;
    #pragma omp parallel for simd if(n >= 32768)
    for (long i = 0; i < n; ++i) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
    }
}
"""

lib = load_c(SOURCE, {"gelu": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.gelu(x, y, x.numel())
        return y
