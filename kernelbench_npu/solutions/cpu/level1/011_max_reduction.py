"""Known-good CPU solution for L1/011_max_reduction (amax over one dim): (outer, r, inner) view;
row maxima are SIMD max-reductions, middle-dim maxima a vectorised running max over whole rows."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
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

constexpr long JB = 512;

extern "C" void amax_dim(const float* __restrict x, float* __restrict y, long outer, long r, long inner) {
    if (inner == 1) {
        #pragma omp parallel for schedule(static) if(outer * r >= 65536)
        for (long o = 0; o < outer; ++o) {
            const float* xo = x + o * r;
            float m = -INFINITY;
            #pragma omp simd reduction(max : m)
            for (long k = 0; k < r; ++k) m = sel(xo[k] > m, xo[k], m);
            y[o] = m;
        }
        return;
    }
    long blocks = (inner + JB - 1) / JB;
    #pragma omp parallel for collapse(2) schedule(static) if(outer * r * inner >= 65536)
    for (long o = 0; o < outer; ++o)
        for (long b = 0; b < blocks; ++b) {
            long j0 = b * JB, w = inner - j0 < JB ? inner - j0 : JB;
            float acc[JB];
            const float* xo = x + o * r * inner + j0;
            #pragma omp simd
            for (long j = 0; j < w; ++j) acc[j] = xo[j];
            for (long k = 1; k < r; ++k) {
                const float* row = xo + k * inner;
                #pragma omp simd
                for (long j = 0; j < w; ++j) acc[j] = sel(row[j] > acc[j], row[j], acc[j]);
            }
            float* yo = y + o * inner + j0;
            #pragma omp simd
            for (long j = 0; j < w; ++j) yo[j] = acc[j];
        }
}
'''

lib = load_c(SOURCE, {"amax_dim": "const float*, float*, int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        d = self.dim % x.dim()
        outer, inner = 1, 1
        for s in x.shape[:d]:
            outer *= s
        for s in x.shape[d + 1:]:
            inner *= s
        y = torch.empty(x.shape[:d] + x.shape[d + 1:], dtype=x.dtype)
        lib.amax_dim(x, y, outer, x.shape[d], inner)
        return y
