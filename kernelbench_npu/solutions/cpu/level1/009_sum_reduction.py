"""Known-good CPU solution for L1/009_sum_reduction (sum over one dim, keepdim): the tensor is
seen as (outer, r, inner); a middle-dim sum adds whole contiguous rows into a vector of
accumulators (vectorised over inner), a last-dim sum is a SIMD reduction per row."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
constexpr long JB = 512;  // inner columns per task: the accumulators stay in L1

extern "C" void sum_dim(const float* __restrict x, float* __restrict y, long outer, long r, long inner) {
    if (inner == 1) {
        #pragma omp parallel for schedule(static) if(outer * r >= 65536)
        for (long o = 0; o < outer; ++o) {
            const float* xo = x + o * r;
            float s = 0.0f;
            #pragma omp simd reduction(+ : s)
            for (long k = 0; k < r; ++k) s += xo[k];
            y[o] = s;
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
                for (long j = 0; j < w; ++j) acc[j] += row[j];
            }
            float* yo = y + o * inner + j0;
            #pragma omp simd
            for (long j = 0; j < w; ++j) yo[j] = acc[j];
        }
}
'''

lib = load_c(SOURCE, {"sum_dim": "const float*, float*, int64, int64, int64"})


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
        shape = list(x.shape)
        shape[d] = 1
        y = torch.empty(shape, dtype=x.dtype)
        lib.sum_dim(x, y, outer, x.shape[d], inner)
        return y
