"""Known-good CPU solution for L1/028_max_pool2d (3x3 window, stride 2, padding 1): per output row,
a vectorised vertical max of the window's input rows into a -inf padded scratch row, then the
horizontal max of each window from it; one (n, c) plane per task over the OpenMP pool."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// c ? a : b on floats as a bit select: without -ffast-math GCC will not if-convert a float
// ternary (IEEE compares may trap), which would leave the loop scalar.
static inline float sel(bool c, float a, float b) {
    int32_t m = -(int32_t)c, ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int32_t r = (ia & m) | (ib & ~m);
    float f;
    memcpy(&f, &r, 4);
    return f;
}

extern "C" void max_pool2d(const float* __restrict x, float* __restrict y, long planes, long h, long w,
                           long k, long stride, long pad, long oh, long ow) {
    long pw = w + 2 * pad + k;  // scratch row: -inf padding on both sides
    #pragma omp parallel if(planes * h * w >= 32768)
    {
        float* col = (float*)malloc(sizeof(float) * pw);
        #pragma omp for schedule(static)
        for (long p = 0; p < planes; ++p) {
            const float* xp = x + p * h * w;
            float* yp = y + p * oh * ow;
            for (long i = 0; i < oh; ++i) {
                for (long j = 0; j < pw; ++j) col[j] = -INFINITY;
                long r0 = i * stride - pad;
                for (long u = 0; u < k; ++u) {
                    long r = r0 + u;
                    if (r < 0 || r >= h) continue;
                    const float* row = xp + r * w;
                    float* c = col + pad;
                    #pragma omp simd
                    for (long j = 0; j < w; ++j) c[j] = sel(row[j] > c[j], row[j], c[j]);
                }
                float* out = yp + i * ow;
                for (long j = 0; j < ow; ++j) {
                    const float* win = col + j * stride;
                    float m = win[0];
                    for (long v = 1; v < k; ++v) m = sel(win[v] > m, win[v], m);
                    out[j] = m;
                }
            }
        }
        free(col);
    }
}
'''

lib = load_c(SOURCE, {"max_pool2d": "const float*, float*, int64, int64, int64, int64, int64, int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)  # holds the window settings

    def forward(self, x):
        x = x.contiguous()
        n, c, h, w = x.shape
        k, stride, pad = self.pool.kernel_size, self.pool.stride, self.pool.padding
        oh = (h + 2 * pad - k) // stride + 1
        ow = (w + 2 * pad - k) // stride + 1
        y = torch.empty(n, c, oh, ow, dtype=x.dtype)
        lib.max_pool2d(x, y, n * c, h, w, k, stride, pad, oh, ow)
        return y
