"""Known-good CPU solution for L1/007_hardtanh (clip to [-0.5, 0.5]): one vectorised pass, NaN kept."""

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

extern "C" void hardtanh(const float* __restrict x, float* __restrict y, long n, float lo, float hi) {
    #pragma omp parallel for simd schedule(static) if(n >= 65536)
    for (long i = 0; i < n; ++i) y[i] = sel(x[i] < lo, lo, sel(x[i] > hi, hi, x[i]));
}
'''

lib = load_c(SOURCE, {"hardtanh": "const float*, float*, int64, float, float"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.min_val, self.max_val = -0.5, 0.5

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.hardtanh(x, y, x.numel(), self.min_val, self.max_val)
        return y
