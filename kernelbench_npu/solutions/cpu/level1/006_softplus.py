"""Known-good CPU solution for L1/006_softplus (beta 2, threshold 10): log1p(exp(beta x)) / beta
below the threshold, x above (as torch), with vectorised exp/log and an accurate log1p."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
#include <stdint.h>
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

// exp(x), <= 1 ulp from the correctly rounded value on the normal range: Cephes reduction and
// polynomial; 2^n applied in two halves so underflow is gradual and overflow gives inf; NaN
// propagates. Branch-free, vectorises under #pragma omp simd.
static inline float fexp(float x) {
    float xc = sel(x > 88.8f, 88.8f, sel(x < -104.0f, -104.0f, x));
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
    float r = xc - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t ni = (int32_t)n, h = ni >> 1;
    int32_t b1 = (h + 127) << 23, b2 = (ni - h + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4);
    memcpy(&s2, &b2, 4);
    return p * s1 * s2;
}

// log(x) for x > 0 (Cephes logf: mantissa in [sqrt(1/2), sqrt(2)), degree-8 polynomial);
// log(0) = -inf, log(inf) = inf, negative or NaN -> NaN.
static inline float flog(float x) {
    int32_t bits;
    memcpy(&bits, &x, 4);
    int32_t e = ((bits >> 23) & 0xff) - 126;
    int32_t mb = (bits & 0x007fffff) | 0x3f000000;  // mantissa scaled to [0.5, 1)
    float m;
    memcpy(&m, &mb, 4);
    bool lo = m < 0.707106781186547524f;
    float fe = (float)(e - (int32_t)lo);
    m = sel(lo, m + m - 1.0f, m - 1.0f);
    float z = m * m;
    float p = 7.0376836292e-2f;
    p = p * m - 1.1514610310e-1f;
    p = p * m + 1.1676998740e-1f;
    p = p * m - 1.2420140846e-1f;
    p = p * m + 1.4249322787e-1f;
    p = p * m - 1.6668057665e-1f;
    p = p * m + 2.0000714765e-1f;
    p = p * m - 2.4999993993e-1f;
    p = p * m + 3.3333331174e-1f;
    float y = m * z * p + fe * -2.12194440e-4f - 0.5f * z;
    y = m + y + fe * 0.693359375f;
    y = sel(x == 0.0f, -INFINITY, y);
    y = sel(x == INFINITY, INFINITY, y);
    return sel((x < 0.0f) | (x != x), NAN, y);
}

// log1p(w) for w >= 0 without losing tiny w: log(u) * w / (u - 1) with u = 1 + w rounded.
static inline float flog1p(float w) {
    float u = 1.0f + w;
    float d = u - 1.0f;
    return sel(d == 0.0f, w, flog(u) * (w / sel(d == 0.0f, 1.0f, d)));
}

extern "C" void softplus(const float* __restrict x, float* __restrict y, long n, float beta, float threshold) {
    float inv_beta = 1.0f / beta;
    #pragma omp parallel for simd schedule(static) if(n >= 32768)
    for (long i = 0; i < n; ++i) {
        float z = x[i] * beta;
        float soft = flog1p(fexp(sel(z > threshold, 0.0f, z))) * inv_beta;
        y[i] = sel(z > threshold, x[i], soft);
    }
}
'''

lib = load_c(SOURCE, {"softplus": "const float*, float*, int64, float, float"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.beta, self.threshold = 2.0, 10.0

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.softplus(x, y, x.numel(), self.beta, self.threshold)
        return y
