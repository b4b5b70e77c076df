"""Known-good CPU solution for L1/033_smooth_l1_loss (beta 0.5, no reduction): one fused,
vectorised pass with torch's formula (0.5 d^2 / beta below beta, d - beta / 2 above)."""

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

extern "C" void smooth_l1(const float* __restrict p, const float* __restrict t, float* __restrict y, long n,
                          float beta) {
    #pragma omp parallel for simd schedule(static) if(n >= 65536)
    for (long i = 0; i < n; ++i) {
        float d = p[i] - t[i];
        d = sel(d < 0.0f, -d, d);
        y[i] = sel(d < beta, 0.5f * d * d / beta, d - 0.5f * beta);
    }
}
'''

lib = load_c(SOURCE, {"smooth_l1": "const float*, const float*, float*, int64, float"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.beta = 0.5

    def forward(self, predictions, targets):
        predictions, targets = predictions.contiguous(), targets.contiguous()
        y = torch.empty_like(predictions)
        lib.smooth_l1(predictions, targets, y, predictions.numel(), self.beta)
        return y
