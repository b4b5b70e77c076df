import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <immintrin.h>
#include <math.h>
#include <sleef.h>
// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), 8 floats at a time
extern "C" void gelu(const float* x, float* y, long n) {
    const float k = 0.7978845608028654f;
    long vec_end = n - n % 8;
    #pragma omp parallel for if(n >= 32768)
    for (long i = 0; i < vec_end; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 cube = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
        __m256 inner = _mm256_mul_ps(_mm256_set1_ps(k), _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(0.044715f), cube)));
        __m256 t = Sleef_tanhf8_u10(inner);
        __m256 half_v = _mm256_mul_ps(_mm256_set1_ps(0.5f), v);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(half_v, _mm256_add_ps(_mm256_set1_ps(1.0f), t)));
    }
    for (long i = vec_end; i < n; ++i) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
    }
}
"""

lib = load_c(SOURCE, {"gelu": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.gelu(x, y, x.numel())
        return y
