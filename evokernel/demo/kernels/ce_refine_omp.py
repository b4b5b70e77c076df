import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
#include <stdint.h>
// Rows over the OpenMP pool (the batch mean reduced in double); per row a SIMD max, then the sum
// of expf(x - max) in float (libm's expf: one call per element).
extern "C" void cross_entropy(const float* __restrict x, const int64_t* __restrict target, float* __restrict out,
                              long rows, long classes) {
    double total = 0.0;
    #pragma omp parallel for reduction(+ : total) schedule(static)
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * classes;
        float m = -INFINITY;
        #pragma omp simd reduction(max : m)
        for (long c = 0; c < classes; ++c) m = fmaxf(m, xr[c]);
        float s = 0.0f;
        for (long c = 0; c < classes; ++c) s += expf(xr[c] - m);
        total += (double)(m + logf(s)) - (double)xr[target[r]];
    }
    out[0] = (float)(total / (double)rows);
}
'''

lib = load_c(SOURCE, {"cross_entropy": "const float*, const int64*, float*, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        logits, targets = logits.contiguous(), targets.contiguous()
        out = torch.empty((), dtype=logits.dtype)
        lib.cross_entropy(logits, targets, out, logits.shape[0], logits.shape[1])
        return out
