"""Known-good CPU solution for L1/029_avg_pool1d (window 4, stride 2, no padding): each output is
the window sum in torch's order divided by the window size; vectorised over outputs, one
(n, c) row per task over the OpenMP pool."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
extern "C" void avg_pool1d(const float* __restrict x, float* __restrict y, long rows, long len, long k,
                           long stride, long olen) {
    float fk = (float)k;
    #pragma omp parallel for schedule(static) if(rows * len >= 32768)
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * len;
        float* yr = y + r * olen;
        if (k == 4 && stride == 2) {
            #pragma omp simd
            for (long t = 0; t < olen; ++t) {
                const float* win = xr + 2 * t;
                yr[t] = (((win[0] + win[1]) + win[2]) + win[3]) / fk;
            }
        } else {
            for (long t = 0; t < olen; ++t) {
                float s = 0.0f;
                for (long v = 0; v < k; ++v) s += xr[t * stride + v];
                yr[t] = s / fk;
            }
        }
    }
}
'''

lib = load_c(SOURCE, {"avg_pool1d": "const float*, float*, int64, int64, int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size=4, stride=2)  # holds the window settings

    def forward(self, x):
        x = x.contiguous()
        n, c, length = x.shape
        k, stride = self.pool.kernel_size[0], self.pool.stride[0]
        olen = (length - k) // stride + 1
        y = torch.empty(n, c, olen, dtype=x.dtype)
        lib.avg_pool1d(x, y, n * c, length, k, stride, olen)
        return y
