import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
// y = max(x, 0), one element at a time.
extern "C" void relu(const float* x, float* y, long n) {
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
