"""Known-good CPU solution for L2/003_matmul_scale_softmax: blocked GEMM (packed B panels, 6 x 16
register tiles) into the output, then scale and a stable softmax per row in the same parallel
region while the rows are hot."""

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

// ---- GEMM core: C[m x n] = A . B with packed B panels and a 6 x 16 register tile ----------
// A(i, p) = A[i * sai + p * sap] (any strides: A^T costs no copy). B is never read directly:
// pack(p0, kc, Bp) writes rows [p0, p0 + kc) of B as 16-column panels, Bp[q][p][0..15] (zero
// padded), so that any B (plain, transposed, an implicit im2col) shares the same kernel. Blocks:
// KC rows of B per slice (a panel slice is L1-sized), MC rows of A per block (L2). Must be called
// by every thread of an OpenMP parallel region (the work is shared with omp for).
constexpr long MR = 6, NR = 16, KC = 256, MC = 96;

// One MR x NR tile over a k-slice; rows/cols trim the edges; adds into C unless first.
static inline void gemm_tile(const float* A, long sai, long sap, const float* Bp, long kc, float* C, long ldc,
                             long rows, long cols, bool first) {
    v8 c0[MR], c1[MR];
    const float* a[MR];
    for (int r = 0; r < MR; ++r) {
        c0[r] = (v8){};
        c1[r] = (v8){};
        a[r] = A + (r < rows ? r : rows - 1) * sai;  // edge rows re-read a valid row, never stored
    }
    for (long p = 0; p < kc; ++p) {
        v8 b0 = load8(Bp + p * NR), b1 = load8(Bp + p * NR + 8);
        for (int r = 0; r < MR; ++r) {
            float av = a[r][p * sap];
            c0[r] += av * b0;
            c1[r] += av * b1;
        }
    }
    for (long r = 0; r < rows; ++r) {
        float* cr = C + r * ldc;
        if (cols == NR) {
            if (!first) { c0[r] += load8(cr); c1[r] += load8(cr + 8); }
            store8(cr, c0[r]);
            store8(cr + 8, c1[r]);
        } else {
            float t[NR];
            store8(t, c0[r]);
            store8(t + 8, c1[r]);
            for (long j = 0; j < cols; ++j) cr[j] = first ? t[j] : cr[j] + t[j];
        }
    }
}

// Bp: scratch of KC * round_up(n, NR) floats shared by the team.
template <class PackB>
static void gemm(long m, long n, long k, const float* A, long sai, long sap, float* C, long ldc, float* Bp,
                 PackB pack) {
    long panels = (n + NR - 1) / NR, mblocks = (m + MC - 1) / MC;
    for (long p0 = 0; p0 < k; p0 += KC) {
        long kc = k - p0 < KC ? k - p0 : KC;
        pack(p0, kc, Bp);  // an omp for: its implicit barrier publishes Bp
        #pragma omp for collapse(2) schedule(static)
        for (long ib = 0; ib < mblocks; ++ib)
            for (long q = 0; q < panels; ++q) {
                long i1 = (ib + 1) * MC < m ? (ib + 1) * MC : m;
                long cols = n - q * NR < NR ? n - q * NR : NR;
                for (long i = ib * MC; i < i1; i += MR)
                    gemm_tile(A + i * sai + p0 * sap, sai, sap, Bp + q * kc * NR, kc, C + i * ldc + q * NR, ldc,
                              i1 - i < MR ? i1 - i : MR, cols, p0 == 0);
            }
    }
}

// The usual packer: B(p, j) = B[p * sbp + j * sbj] (sbj = 1: row-major; sbp = 1: B^T, e.g. W^T).
struct StridedB {
    const float* B;
    long sbp, sbj, n;
    void operator()(long p0, long kc, float* Bp) const {
        long panels = (n + NR - 1) / NR;
        #pragma omp for schedule(static)
        for (long q = 0; q < panels; ++q) {
            long j0 = q * NR, w = n - j0 < NR ? n - j0 : NR;
            for (long p = 0; p < kc; ++p) {
                const float* src = B + (p0 + p) * sbp + j0 * sbj;
                float* d = Bp + (q * kc + p) * NR;
                for (long j = 0; j < w; ++j) d[j] = src[j * sbj];
                for (long j = w; j < NR; ++j) d[j] = 0.0f;
            }
        }
    }
};

static inline long gemm_scratch_floats(long n) { return KC * ((n + NR - 1) / NR) * NR; }

extern "C" void matmul_scale_softmax(const float* a, const float* b, float* y, long m, long k, long n, float scale) {
    float* bp = (float*)malloc(sizeof(float) * gemm_scratch_floats(n));
    #pragma omp parallel if(m * n * k >= 262144)
    {
        gemm(m, n, k, a, k, 1, y, n, bp, StridedB{b, n, 1, n});
        #pragma omp for schedule(static)
        for (long i = 0; i < m; ++i) {
            float* row = y + i * n;
            float mx = -INFINITY;
            #pragma omp simd reduction(max : mx)
            for (long j = 0; j < n; ++j) {
                row[j] *= scale;
                mx = sel(row[j] > mx, row[j], mx);
            }
            float s = 0.0f;
            #pragma omp simd reduction(+ : s)
            for (long j = 0; j < n; ++j) {
                row[j] = fexp(row[j] - mx);
                s += row[j];
            }
            float inv = 1.0f / s;
            #pragma omp simd
            for (long j = 0; j < n; ++j) row[j] *= inv;
        }
    }
    free(bp);
}
'''

lib = load_c(SOURCE, {"matmul_scale_softmax": "const float*, const float*, float*, int64, int64, int64, float"})


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        m, k = a.shape
        n = b.shape[1]
        y = torch.empty(m, n, dtype=a.dtype)
        lib.matmul_scale_softmax(a, b, y, m, k, n, self.scale)
        return y
