"""Known-good CPU solution for L1/030_cumsum (inclusive prefix sum over one dim): accumulation in
double like torch's CPU kernel (so results match it bit for bit), four rows interleaved per task
to hide the add latency of the serial chain; rows over the OpenMP pool. A middle-dim scan keeps a
vector of running sums instead."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <stdlib.h>

extern "C" void cumsum_dim(const float* __restrict x, float* __restrict y, long outer, long len, long inner) {
    if (inner == 1) {
        long groups = (outer + 3) / 4;
        #pragma omp parallel for schedule(static) if(outer * len >= 32768)
        for (long g = 0; g < groups; ++g) {
            long r0 = g * 4, nr = outer - r0 < 4 ? outer - r0 : 4;
            if (nr == 4) {
                const float *x0 = x + r0 * len, *x1 = x0 + len, *x2 = x1 + len, *x3 = x2 + len;
                float *y0 = y + r0 * len, *y1 = y0 + len, *y2 = y1 + len, *y3 = y2 + len;
                double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
                for (long t = 0; t < len; ++t) {
                    s0 += x0[t]; s1 += x1[t]; s2 += x2[t]; s3 += x3[t];
                    y0[t] = (float)s0; y1[t] = (float)s1; y2[t] = (float)s2; y3[t] = (float)s3;
                }
            } else {
                for (long r = r0; r < r0 + nr; ++r) {
                    double s = 0.0;
                    for (long t = 0; t < len; ++t) { s += x[r * len + t]; y[r * len + t] = (float)s; }
                }
            }
        }
        return;
    }
    #pragma omp parallel for schedule(static) if(outer * len * inner >= 32768)
    for (long o = 0; o < outer; ++o) {
        double* acc = (double*)calloc(inner, sizeof(double));
        for (long t = 0; t < len; ++t) {
            const float* xr = x + (o * len + t) * inner;
            float* yr = y + (o * len + t) * inner;
            #pragma omp simd
            for (long j = 0; j < inner; ++j) { acc[j] += xr[j]; yr[j] = (float)acc[j]; }
        }
        free(acc);
    }
}
'''

lib = load_c(SOURCE, {"cumsum_dim": "const float*, float*, int64, int64, int64"})


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
        y = torch.empty_like(x)
        lib.cumsum_dim(x, y, outer, x.shape[d], inner)
        return y
