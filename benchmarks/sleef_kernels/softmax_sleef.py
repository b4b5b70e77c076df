import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <immintrin.h>
#include <math.h>
#include <sleef.h>
// Numerically stable softmax over rows, one row per thread; exp 8 floats at a time with SLEEF.
extern "C" void softmax_rows(const float* x, float* y, long rows, long cols) {
    long vec_end = cols - cols % 8;
    #pragma omp parallel for if(rows * cols >= 32768)
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = -INFINITY;
        #pragma omp simd reduction(max:m)
        for (long c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        __m256 vm = _mm256_set1_ps(m), vsum = _mm256_setzero_ps();
        for (long c = 0; c < vec_end; c += 8) {
            __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_loadu_ps(xr + c), vm));
            _mm256_storeu_ps(yr + c, e);
            vsum = _mm256_add_ps(vsum, e);
        }
        float lanes[8];
        _mm256_storeu_ps(lanes, vsum);
        float sum = 0.0f;
        for (int l = 0; l < 8; ++l) sum += lanes[l];
        for (long c = vec_end; c < cols; ++c) { yr[c] = expf(xr[c] - m); sum += yr[c]; }
        float inv = 1.0f / sum;
        #pragma omp simd
        for (long c = 0; c < cols; ++c) yr[c] *= inv;
    }
}
"""

lib = load_c(SOURCE, {"softmax_rows": "const float*, float*, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.softmax_rows(x, y, x.shape[0], x.shape[1])
        return y
