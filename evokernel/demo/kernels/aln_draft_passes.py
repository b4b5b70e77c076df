import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
#include <stdlib.h>
// y = LayerNorm(x + residual) * gain, op by op as the reference does, each a parallel loop: the sum,
// the row statistics, then normalisation, LayerNorm's affine and the gain.
extern "C" void add_ln_scale(const float* x, const float* res, const float* w, const float* b,
                             const float* gain, float* y, long rows, long cols, float eps) {
    double* mean = (double*)malloc(rows * sizeof(double));
    double* rstd = (double*)malloc(rows * sizeof(double));
    #pragma omp parallel for
    for (long i = 0; i < rows * cols; ++i) y[i] = x[i] + res[i];
    #pragma omp parallel for
    for (long r = 0; r < rows; ++r) {
        double s = 0.0, q = 0.0;
        for (long c = 0; c < cols; ++c) s += y[r * cols + c];
        mean[r] = s / cols;
        for (long c = 0; c < cols; ++c) q += (y[r * cols + c] - mean[r]) * (y[r * cols + c] - mean[r]);
        rstd[r] = 1.0 / sqrt(q / cols + eps);
    }
    #pragma omp parallel for
    for (long i = 0; i < rows * cols; ++i) {
        long r = i / cols, c = i % cols;
        y[i] = ((float)((y[i] - mean[r]) * rstd[r]) * w[c] + b[c]) * gain[c];
    }
    free(mean);
    free(rstd);
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
