import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <immintrin.h>
#include <math.h>
#include <sleef.h>
extern "C" void sigmoid(const float* x, float* y, long n) {
    long vec_end = n - n % 8;
    #pragma omp parallel for if(n >= 32768)
    for (long i = 0; i < vec_end; i += 8) {
        __m256 e = Sleef_expf8_u10(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_loadu_ps(x + i)));
        _mm256_storeu_ps(y + i, _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
    }
    for (long i = vec_end; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}
"""

lib = load_c(SOURCE, {"sigmoid": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.sigmoid(x, y, x.numel())
        return y
