import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <stdint.h>
#include <string.h>
// The fused kernel with the classic bit-trick inverse square root and one Newton step instead of
// 1 / sqrtf: one division less per row.
static inline float fast_rsqrt(float v) {
    int32_t i;
    memcpy(&i, &v, 4);
    i = 0x5f3759df - (i >> 1);
    float y;
    memcpy(&y, &i, 4);
    return y * (1.5f - 0.5f * v * y * y);
}

extern "C" void rms_norm(const float* __restrict x, const float* __restrict w, float* __restrict y,
                         long rows, long cols, float eps) {
    #pragma omp parallel for schedule(static) if(rows * cols >= 32768)
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float q = 0.0f;
        #pragma omp simd reduction(+ : q)
        for (long c = 0; c < cols; ++c) q += xr[c] * xr[c];
        float scale = fast_rsqrt(q / (float)cols + eps);
        #pragma omp simd
        for (long c = 0; c < cols; ++c) yr[c] = xr[c] * scale * w[c];
    }
}
'''

lib = load_c(SOURCE, {"rms_norm": "const float*, const float*, float*, int64, int64, float"})


class ModelNew(nn.Module):
    def __init__(self, features: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(features))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        lib.rms_norm(x, self.weight, y, x.numel() // cols, cols, self.eps)
        return y
