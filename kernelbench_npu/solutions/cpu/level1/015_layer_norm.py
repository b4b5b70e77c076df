"""Known-good CPU solution for L1/015_layer_norm (last dim, learned affine): per row a two-pass
mean/variance (SIMD reductions, stable for large offsets) and one fused normalise-scale-shift
pass; rows over the OpenMP pool. Weight and bias are read from the nn.LayerNorm container."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>

extern "C" void layer_norm(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                           float* __restrict y, long rows, long cols, float eps) {
    #pragma omp parallel for schedule(static) if(rows * cols >= 32768)
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float s = 0.0f;
        #pragma omp simd reduction(+ : s)
        for (long c = 0; c < cols; ++c) s += xr[c];
        float mean = s / (float)cols;
        float q = 0.0f;
        #pragma omp simd reduction(+ : q)
        for (long c = 0; c < cols; ++c) { float d = xr[c] - mean; q += d * d; }
        float rstd = 1.0f / sqrtf(q / (float)cols + eps);
        #pragma omp simd
        for (long c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
    }
}
'''

lib = load_c(SOURCE, {"layer_norm": "const float*, const float*, const float*, float*, int64, int64, float"})


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)  # same creation order as Model: same parameters
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(features))
            self.norm.bias.copy_(0.1 * torch.randn(features))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        lib.layer_norm(x, self.norm.weight, self.norm.bias, y, x.numel() // cols, cols, self.norm.eps)
        return y
