import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
// y[i, j] = relu(b1[j] + b2[j] + sum_k x[i, k] w[j, k]); straightforward triple loop.
extern "C" void gemm_bias_relu(const float* x, const float* w, const float* b1, const float* b2,
                               float* y, long m, long k, long n) {
    for (long i = 0; i < m; ++i)
        for (long j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (long t = 0; t < k; ++t) acc += x[i * k + t] * w[j * k + t];
            acc += b1[j] + b2[j];
            y[i * n + j] = acc > 0.0f ? acc : 0.0f;
        }
}
'''

lib = load_c(SOURCE, {"gemm_bias_relu": "const float*, const float*, const float*, const float*, float*, int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(0.1 * torch.randn(out_features))

    def forward(self, x):
        x = x.contiguous()
        m, k = x.shape
        n = self.linear.weight.shape[0]
        y = torch.empty(m, n, dtype=x.dtype)
        lib.gemm_bias_relu(x, self.linear.weight, self.linear.bias, self.bias, y, m, k, n)
        return y
