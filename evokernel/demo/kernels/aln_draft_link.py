import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
// y = LayerNorm(x + residual) * gain, one row at a time.
extern "C" void add_layernorm_scale(const float* x, const float* res, const float* w, const float* b,
                                    const float* gain, float* y, long rows, long cols, float eps) {
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        const float* rr = res + r * cols;
        float* yr = y + r * cols;
        double s = 0.0;
        for (long c = 0; c < cols; ++c) { yr[c] = xr[c] + rr[c]; s += yr[c]; }
        float mean = (float)(s / cols);
        double q = 0.0;
        for (long c = 0; c < cols; ++c) q += (double)(yr[c] - mean) * (yr[c] - mean);
        float rstd = (float)(1.0 / sqrt(q / cols + eps));
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
