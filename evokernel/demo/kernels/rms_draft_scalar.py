import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
// One row at a time: the mean of squares, then scale by rsqrt(mean + eps) and the weight.
extern "C" void rms_norm(const float* x, const float* w, float* y, long rows, long cols, float eps) {
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        double q = 0.0;
        for (long c = 0; c < cols; ++c) q += (double)xr[c] * xr[c];
        float scale = (float)(1.0 / sqrt(q / cols + eps));
        for (long c = 0; c < cols; ++c) y[r * cols + c] = xr[c] * scale * w[c];
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
