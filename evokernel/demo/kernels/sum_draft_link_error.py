import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
// Sum over the middle axis of an (outer, red, inner) view.
extern "C" void sum_reduce(const float* x, float* y, long outer, long red, long inner) {
    for (long o = 0; o < outer; ++o)
        for (long i = 0; i < inner; ++i) {
            double acc = 0.0;
            for (long r = 0; r < red; ++r) acc += x[(o * red + r) * inner + i];
            y[o * inner + i] = (float)acc;
        }
}
'''

lib = load_c(SOURCE, {"sum_dim": "const float*, float*, int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        dim = self.dim % x.dim()
        outer = 1
        for s in x.shape[:dim]:
            outer *= s
        inner = 1
        for s in x.shape[dim + 1:]:
            inner *= s
        shape = list(x.shape)
        shape[dim] = 1
        y = torch.empty(shape, dtype=x.dtype)
        lib.sum_dim(x, y, outer, x.shape[dim], inner)
        return y
