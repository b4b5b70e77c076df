"""Known-good CPU solution for L1/001_relu: one vectorised pass over the flat tensor, split
over the OpenMP pool (NaN propagates, as torch.relu does)."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
extern "C" void relu(const float* __restrict x, float* __restrict y, long n) {
    #pragma omp parallel for simd schedule(static) if(n >= 65536)
    for (long i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
'''

lib = load_c(SOURCE, {"relu": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
