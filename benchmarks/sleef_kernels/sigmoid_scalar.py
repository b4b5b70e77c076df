import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <math.h>
extern "C" void sigmoid(const float* x, float* y, long n) {
    #pragma omp parallel for simd if(n >= 32768)
    for (long i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
"""

lib = load_c(SOURCE, {"sigmoid": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.sigmoid(x, y, x.numel())
        return y
