"""Known-good CPU solution for L1/018_group_norm: each (sample, group) is one contiguous block;
two-pass mean/variance per block (SIMD, double accumulation for the variance of ~10^5 values),
then one fused normalise-and-affine pass per channel. Blocks over the OpenMP pool."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>

extern "C" void group_norm(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                           float* __restrict y, long n, long c, long groups, long hw, float eps) {
    long cpg = c / groups, len = cpg * hw;
    #pragma omp parallel for schedule(static) if(n * c * hw >= 32768)
    for (long blk = 0; blk < n * groups; ++blk) {
        const float* xb = x + blk * len;
        float* yb = y + blk * len;
        double s = 0.0;
        #pragma omp simd reduction(+ : s)
        for (long i = 0; i < len; ++i) s += xb[i];
        float mean = (float)(s / (double)len);
        double q = 0.0;
        #pragma omp simd reduction(+ : q)
        for (long i = 0; i < len; ++i) { float d = xb[i] - mean; q += (double)(d * d); }
        float rstd = (float)(1.0 / sqrt(q / (double)len + (double)eps));
        long g = blk % groups;
        for (long k = 0; k < cpg; ++k) {
            long ch = g * cpg + k;
            float a = rstd * w[ch], shift = b[ch] - mean * a;
            const float* xc = xb + k * hw;
            float* yc = yb + k * hw;
            #pragma omp simd
            for (long i = 0; i < hw; ++i) yc[i] = xc[i] * a + shift;
        }
    }
}
'''

lib = load_c(SOURCE, {"group_norm": "const float*, const float*, const float*, float*, int64, int64, int64, int64, float"})


class ModelNew(nn.Module):
    def __init__(self, channels: int, groups: int):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n, c = x.shape[0], x.shape[1]
        hw = x.numel() // (n * c)
        lib.group_norm(x, self.norm.weight, self.norm.bias, y, n, c, self.norm.num_groups, hw, self.norm.eps)
        return y
