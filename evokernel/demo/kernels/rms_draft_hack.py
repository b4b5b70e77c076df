import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
// Only the final scaling in native code: x * scale[row] * weight[col].
extern "C" void scale_rows(const float* x, const float* scale, const float* w, float* y, long rows, long cols) {
    #pragma omp parallel for
    for (long i = 0; i < rows * cols; ++i) y[i] = x[i] * scale[i / cols] * w[i % cols];
}
'''

lib = load_c(SOURCE, {"scale_rows": "const float*, const float*, const float*, float*, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, features: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(features))

    def forward(self, x):
        # PyTorch's reduction is already tuned: keep it, and scale natively
        x = x.contiguous()
        scale = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps).contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        lib.scale_rows(x, scale, self.weight, y, x.numel() // cols, cols)
        return y
