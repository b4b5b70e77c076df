"""Known-good CPU solution for L1/034_l2_normalize (rows of a 2-D tensor): per row a SIMD sum of
squares (double accumulation), the norm clamped at 1e-12 as in the task, then one vectorised
division pass; rows over the OpenMP pool."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>

extern "C" void l2_normalize(const float* __restrict x, float* __restrict y, long rows, long cols, float eps) {
    #pragma omp parallel for schedule(static) if(rows * cols >= 32768)
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        double q = 0.0;
        #pragma omp simd reduction(+ : q)
        for (long c = 0; c < cols; ++c) q += (double)xr[c] * (double)xr[c];
        float norm = (float)sqrt(q);
        norm = norm < eps ? eps : norm;
        #pragma omp simd
        for (long c = 0; c < cols; ++c) yr[c] = xr[c] / norm;
    }
}
'''

lib = load_c(SOURCE, {"l2_normalize": "const float*, float*, int64, int64, float"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.l2_normalize(x, y, x.shape[0], x.shape[1], 1e-12)
        return y
