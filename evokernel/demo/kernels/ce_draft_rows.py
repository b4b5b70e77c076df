import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
#include <stdint.h>
// Cross-entropy per row, rows over the thread pool: log-sum-exp of the logits (max subtracted)
// minus the target's logit, averaged over the batch.
extern "C" void cross_entropy(const float* x, const int64_t* target, float* out, long rows, long classes) {
    double total = 0.0;
    #pragma omp parallel for reduction(+ : total)
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * classes;
        double m = xr[0];
        for (long c = 1; c < classes; ++c) m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (long c = 0; c < classes; ++c) s += exp(xr[c] - m);
        total += m + log(s) - xr[target[r]];
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
