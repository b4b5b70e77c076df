"""Known-good CPU solution for L1/026_conv2d_depthwise (5x5, padding 2, groups = channels): each
(n, c) plane is copied once into a zero-padded buffer, then every output row is a vectorised sum
of 25 shifted input rows (no bounds checks in the inner loop); planes over the OpenMP pool."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <stdlib.h>
#include <string.h>

extern "C" void depthwise2d(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                            float* __restrict y, long batch, long c, long h, long wd, long k, long pad) {
    long oh = h + 2 * pad - k + 1, ow = wd + 2 * pad - k + 1, ph = h + 2 * pad, pw = wd + 2 * pad;
    #pragma omp parallel if(batch * c * h * wd >= 32768)
    {
        float* buf = (float*)calloc(ph * pw, sizeof(float));  // padding stays zero
        #pragma omp for schedule(static)
        for (long p = 0; p < batch * c; ++p) {
            const float* xp = x + p * h * wd;
            const float* wp = w + (p % c) * k * k;
            for (long i = 0; i < h; ++i) memcpy(buf + (i + pad) * pw + pad, xp + i * wd, wd * sizeof(float));
            float* yp = y + p * oh * ow;
            for (long i = 0; i < oh; ++i) {
                float* out = yp + i * ow;
                float bias = b[p % c];
                #pragma omp simd
                for (long j = 0; j < ow; ++j) out[j] = bias;
                for (long u = 0; u < k; ++u) {
                    const float* row = buf + (i + u) * pw;
                    for (long v = 0; v < k; ++v) {
                        float wv = wp[u * k + v];
                        #pragma omp simd
                        for (long j = 0; j < ow; ++j) out[j] += wv * row[j + v];
                    }
                }
            }
        }
        free(buf);
    }
}
'''

lib = load_c(SOURCE, {"depthwise2d": "const float*, const float*, const float*, float*, int64, int64, int64, int64, "
                                     "int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=2, groups=channels)

    def forward(self, x):
        x = x.contiguous()
        batch, c, h, w = x.shape
        k, pad = self.conv.kernel_size[0], self.conv.padding[0]
        y = torch.empty(batch, c, h + 2 * pad - k + 1, w + 2 * pad - k + 1, dtype=x.dtype)
        lib.depthwise2d(x, self.conv.weight, self.conv.bias, y, batch, c, h, w, k, pad)
        return y
