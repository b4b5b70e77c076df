"""Known-good CPU solution for L1/002_leaky_relu (slope 0.05): one vectorised pass, OpenMP split."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <stdint.h>
#include <string.h>

// c ? a : b on floats as a bit select: without -ffast-math GCC will not if-convert a float
// ternary (IEEE compares may trap), which would leave the loop scalar.
static inline float sel(bool c, float a, float b) {
    int32_t m = -(int32_t)c, ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int32_t r = (ia & m) | (ib & ~m);
    float f;
    memcpy(&f, &r, 4);
    return f;
}

extern "C" void leaky_relu(const float* __restrict x, float* __restrict y, long n, float slope) {
    #pragma omp parallel for simd schedule(static) if(n >= 65536)
    for (long i = 0; i < n; ++i) y[i] = sel(x[i] < 0.0f, x[i] * slope, x[i]);
}
'''

lib = load_c(SOURCE, {"leaky_relu": "const float*, float*, int64, float"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.negative_slope = 0.05

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.leaky_relu(x, y, x.numel(), self.negative_slope)
        return y
