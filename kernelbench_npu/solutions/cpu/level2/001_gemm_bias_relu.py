"""Known-good CPU solution for L2/001_gemm_bias_relu: relu(x W^T + b + bias) for a small batch:
dot products along k (4 rows of x x 2 rows of W in vector registers, W streamed once per 4
rows), then both biases and the relu in one pass. Parameters are read from the nn.Linear."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <string.h>

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

extern "C" void gemm_bias_relu(const float* x, const float* w, const float* b1, const float* b2, float* y,
                               long m, long k, long n) {
    #pragma omp parallel if(m * n * k >= 65536)
    {
        linear_nt(x, w, y, m, k, n);
        #pragma omp for schedule(static)
        for (long i = 0; i < m; ++i) {
            float* row = y + i * n;
            #pragma omp simd
            for (long j = 0; j < n; ++j) {
                float v = (row[j] + b1[j]) + b2[j];
                row[j] = v < 0.0f ? 0.0f : v;
            }
        }
    }
}
'''

lib = load_c(SOURCE, {"gemm_bias_relu": "const float*, const float*, const float*, const float*, float*, "
                                        "int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(0.1 * torch.randn(out_features))

    def forward(self, x):
        x = x.contiguous()
        m, k = x.shape
        n = self.linear.out_features
        y = torch.empty(m, n, dtype=x.dtype)
        lib.gemm_bias_relu(x, self.linear.weight, self.linear.bias, self.bias, y, m, k, n)
        return y
