import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <omp.h>
#define BLOCK 512
// Sum over the middle axis of an (outer, red, inner) view. Each work item owns one block of
// BLOCK outputs and streams the reduced rows contiguously (unit-stride, vectorised adds).
extern "C" void sum_reduce(const float* __restrict x, float* __restrict y, long outer, long red, long inner) {
    long nblocks = (inner + BLOCK - 1) / BLOCK;
    #pragma omp parallel for schedule(static)
    for (long t = 0; t < outer * nblocks; ++t) {
        long o = t / nblocks, i0 = (t % nblocks) * BLOCK;
        long len = inner - i0 < BLOCK ? inner - i0 : BLOCK;
        float acc[BLOCK];
        for (long i = 0; i < len; ++i) acc[i] = 0.0f;
        for (long r = 0; r < red; ++r) {
            const float* row = x + (o * red + r) * inner + i0;
            #pragma omp simd
            for (long i = 0; i < len; ++i) acc[i] += row[i];
        }
        for (long i = 0; i < len; ++i) y[o * inner + i0 + i] = acc[i];
    }
}
'''

lib = load_c(SOURCE, {"sum_reduce": "const float*, float*, int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        dim = self.dim % x.dim()
        outer = 1
        for s in x.shape[:dim]:
            outer *= s
        inner = 1
        for s in x.shape[dim + 1:]:
            inner *= s
        shape = list(x.shape)
        shape[dim] = 1
        y = torch.empty(shape, dtype=x.dtype)
        lib.sum_reduce(x, y, outer, x.shape[dim], inner)
        return y
