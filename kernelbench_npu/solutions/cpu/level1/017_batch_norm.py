"""Known-good CPU solution for L1/017_batch_norm (BatchNorm2d, eval mode): the running statistics
and affine parameters fold into y = x * a[c] + b[c]; one vectorised pass per (n, c) plane, planes
over the OpenMP pool. Statistics are read from the nn.BatchNorm2d container."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>

extern "C" void batch_norm_eval(const float* __restrict x, const float* __restrict mean,
                                const float* __restrict var, const float* __restrict w,
                                const float* __restrict b, float* __restrict y,
                                long n, long c, long hw, float eps) {
    #pragma omp parallel for schedule(static) if(n * c * hw >= 32768)
    for (long p = 0; p < n * c; ++p) {
        long ch = p % c;
        float a = w[ch] / sqrtf(var[ch] + eps);
        float shift = b[ch] - mean[ch] * a;
        const float* xp = x + p * hw;
        float* yp = y + p * hw;
        #pragma omp simd
        for (long i = 0; i < hw; ++i) yp[i] = xp[i] * a + shift;
    }
}
'''

lib = load_c(SOURCE, {"batch_norm_eval": "const float*, const float*, const float*, const float*, "
                                         "const float*, float*, int64, int64, int64, float"})


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.norm.running_mean.copy_(0.5 * torch.randn(channels))
            self.norm.running_var.copy_(0.5 + torch.rand(channels))
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(channels))
            self.norm.bias.copy_(0.2 * torch.randn(channels))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n, c, h, w = x.shape
        norm = self.norm
        lib.batch_norm_eval(x, norm.running_mean, norm.running_var, norm.weight, norm.bias, y, n, c, h * w, norm.eps)
        return y
