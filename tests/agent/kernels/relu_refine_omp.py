import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <omp.h>
// y = max(x, 0): parallel over the thread pool, vectorised inner loop.
extern "C" void relu(const float* __restrict x, float* __restrict y, long n) {
    #pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
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
