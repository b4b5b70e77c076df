"""Known-good CPU solution for L1/031_mse_loss: one fused pass, sum of (p - t)^2 with a SIMD
reduction in double per thread (no difference or square tensors), divided by the count."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
extern "C" void mse(const float* __restrict p, const float* __restrict t, float* __restrict out, long n) {
    double s = 0.0;
    #pragma omp parallel for simd reduction(+ : s) schedule(static) if(n >= 65536)
    for (long i = 0; i < n; ++i) {
        float d = p[i] - t[i];
        s += (double)(d * d);
    }
    out[0] = (float)(s / (double)n);
}
'''

lib = load_c(SOURCE, {"mse": "const float*, const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        predictions, targets = predictions.contiguous(), targets.contiguous()
        out = torch.empty((), dtype=predictions.dtype)
        lib.mse(predictions, targets, out, predictions.numel())
        return out
