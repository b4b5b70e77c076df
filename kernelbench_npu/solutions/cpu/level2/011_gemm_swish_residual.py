"""Known-good CPU solution for L2/011_gemm_swish_residual: x + y * sigmoid(y), y = x W^T + b:
small-batch dot-product GEMM, then bias, swish (vectorised exp) and the residual in one pass."""

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

// 8-float vectors (GCC/Clang vector extension: one AVX2 register, two SSE or NEON registers);
// loads and stores go through memcpy, so any alignment is fine.
typedef float v8 __attribute__((vector_size(32)));

static inline v8 load8(const float* p) { v8 v; memcpy(&v, p, sizeof v); return v; }
static inline void store8(float* p, v8 v) { memcpy(p, &v, sizeof v); }
static inline float hsum8(v8 v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// ---- y = x . W^T for few rows of x (nn.Linear layout, W is [n x k]) ------------------------
// Dot products along k: 4 rows of x against 2 rows of W per step (8 vector accumulators), W
// read in L2-sized blocks of JB rows, each block against every row of x; blocks over the pool.
// No packing: W is streamed once per 4 rows of x, which is what small batches need.
constexpr long JB = 16;

// out[r][c] = x[i0 + r] . w[j0 + c] for r < rows (<= 4), c < cols (<= 2).
static inline void dot_4x2(const float* x, const float* w, long k, long i0, long rows, long j0, long cols,
                           float out[4][2]) {
    const float* xr[4];
    const float* wc[2];
    for (int r = 0; r < 4; ++r) xr[r] = x + (i0 + (r < rows ? r : rows - 1)) * k;
    for (int c = 0; c < 2; ++c) wc[c] = w + (j0 + (c < cols ? c : cols - 1)) * k;
    v8 acc[4][2];
    for (int r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = (v8){};
    long p = 0;
    for (; p + 8 <= k; p += 8) {
        v8 w0 = load8(wc[0] + p), w1 = load8(wc[1] + p);
        for (int r = 0; r < 4; ++r) {
            v8 xv = load8(xr[r] + p);
            acc[r][0] += xv * w0;
            acc[r][1] += xv * w1;
        }
    }
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 2; ++c) {
            float s = hsum8(acc[r][c]);
            for (long t = p; t < k; ++t) s += xr[r][t] * wc[c][t];
            out[r][c] = s;
        }
}

// y[i][j] = x[i] . w[j] for all i < m, j < n (y row-major, ld n). Call inside a parallel region.
static void linear_nt(const float* x, const float* w, float* y, long m, long k, long n) {
    #pragma omp for schedule(static)
    for (long jb = 0; jb < n; jb += JB) {
        long j1 = jb + JB < n ? jb + JB : n;
        for (long i = 0; i < m; i += 4)
            for (long j = jb; j < j1; j += 2) {
                long rows = m - i < 4 ? m - i : 4, cols = j1 - j < 2 ? j1 - j : 2;
                float out[4][2];
                dot_4x2(x, w, k, i, rows, j, cols, out);
                for (long r = 0; r < rows; ++r)
                    for (long c = 0; c < cols; ++c) y[(i + r) * n + j + c] = out[r][c];
            }
    }
}

extern "C" void gemm_swish_residual(const float* x, const float* w, const float* b, float* y, long m, long k) {
    #pragma omp parallel if(m * k * k >= 65536)
    {
        linear_nt(x, w, y, m, k, k);
        #pragma omp for schedule(static)
        for (long i = 0; i < m; ++i) {
            float* row = y + i * k;
            const float* xr = x + i * k;
            #pragma omp simd
            for (long j = 0; j < k; ++j) {
                float v = row[j] + b[j];
                row[j] = xr[j] + v / (1.0f + fexp(-v));
            }
        }
    }
}
'''

lib = load_c(SOURCE, {"gemm_swish_residual": "const float*, const float*, const float*, float*, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.gemm_swish_residual(x, self.linear.weight, self.linear.bias, y, x.shape[0], x.shape[1])
        return y
