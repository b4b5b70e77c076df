import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
// GELU: 0.5 x (1 + erf(x / sqrt(2))), elements split over the OpenMP pool.
extern "C" void gelu_tanh(const float* x, float* y, long n) {
    #pragma omp parallel for
    for (long i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f));
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
