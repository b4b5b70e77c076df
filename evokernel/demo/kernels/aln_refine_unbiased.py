import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
// Fused as before; the variance as the unbiased sample variance (sum of squares / (n - 1)).

extern "C" void add_ln_scale(const float* __restrict x, const float* __restrict res, const float* __restrict w,
                             const float* __restrict b, const float* __restrict gain, float* __restrict y,
                             long rows, long cols, float eps) {
    #pragma omp parallel for schedule(static) if(rows * cols >= 32768)
    for (long r = 0; r < rows; ++r) {
        const float *xr = x + r * cols, *rr = res + r * cols;
        float* yr = y + r * cols;
        float s = 0.0f;
        #pragma omp simd reduction(+ : s)
        for (long c = 0; c < cols; ++c) {
            yr[c] = xr[c] + rr[c];
            s += yr[c];
        }
        float mean = s / (float)cols;
        float q = 0.0f;
        #pragma omp simd reduction(+ : q)
        for (long c = 0; c < cols; ++c) { float d = yr[c] - mean; q += d * d; }
        float rstd = 1.0f / sqrtf(q / (float)(cols - 1) + eps);
        #pragma omp simd
        for (long c = 0; c < cols; ++c) yr[c] = ((yr[c] - mean) * rstd * w[c] + b[c]) * gain[c];
    }
}
'''

lib = load_c(SOURCE, {"add_ln_scale": "const float*, const float*, const float*, const float*, const float*, float*, "
                                      "int64, int64, float"})


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.gain = nn.Parameter(1.0 + 0.5 * torch.randn(features))

    def forward(self, x, residual):
        x, residual = x.contiguous(), residual.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        lib.add_ln_scale(x, residual, self.norm.weight, self.norm.bias, self.gain, y, x.numel() // cols, cols,
                         self.norm.eps)
        return y
