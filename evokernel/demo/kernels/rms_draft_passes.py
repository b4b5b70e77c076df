import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
#include <stdlib.h>
// The reference op by op, each a parallel loop: the mean of squares per row, the scale per row,
// then x * scale * weight over every element.
extern "C" void rms_norm(const float* x, const float* w, float* y, long rows, long cols, float eps) {
    double* ms = (double*)malloc(rows * sizeof(double));
    #pragma omp parallel for
    for (long r = 0; r < rows; ++r) {
        double q = 0.0;
        for (long c = 0; c < cols; ++c) q += (double)x[r * cols + c] * x[r * cols + c];
        ms[r] = q / cols;
    }
    #pragma omp parallel for
    for (long r = 0; r < rows; ++r) ms[r] = 1.0 / sqrt(ms[r] + eps);
    #pragma omp parallel for
    for (long i = 0; i < rows * cols; ++i) y[i] = x[i] * (float)ms[i / cols] * w[i % cols];
    free(ms);
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
