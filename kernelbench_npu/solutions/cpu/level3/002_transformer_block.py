"""Known-good CPU solution for L3/002_transformer_block: the whole block in one OpenMP region.
LayerNorms are row passes; the four projections are blocked GEMMs against the nn.Linear weights
read transposed through strides; attention runs per (batch, head) task with a stable softmax
over a scratch row, reading q/k/v straight out of the fused qkv activation (no reshapes or
transposes are materialised); biases, GELU and residuals are fused into row passes."""

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

// erf(x) within 2 ulp: fdlibm's rational form x + x * P(x^2)/Q(x^2) below 0.84375 (accurate for
// tiny x, where erf(x) ~ 1.128 x), and 1 - erfc(|x|) above, erfc from the Numerical Recipes
// Chebyshev fit (fractional error < 1.2e-7); sign restored, NaN propagates.
static inline float ferf(float x) {
    float ax = sel(x < 0.0f, -x, x);
    float z = x * x;
    float r = -2.3763017452e-05f;
    r = r * z - 5.7702702470e-03f;
    r = r * z - 2.8481749818e-02f;
    r = r * z - 3.2504209876e-01f;
    r = r * z + 1.2837916613e-01f;
    float s = -3.9602282413e-06f;
    s = s * z + 1.3249473704e-04f;
    s = s * z + 5.0813062117e-03f;
    s = s * z + 6.5022252500e-02f;
    s = s * z + 3.9791721106e-01f;
    s = s * z + 1.0f;
    float small = x + x * (r / s);
    float t = 1.0f / (1.0f + 0.5f * ax);  // erfc(|x|) with fractional error < 1.2e-7 (Numerical Recipes)
    float q = 0.17087277f;
    q = q * t - 0.82215223f;
    q = q * t + 1.48851587f;
    q = q * t - 1.13520398f;
    q = q * t + 0.27886807f;
    q = q * t - 0.18628806f;
    q = q * t + 0.09678418f;
    q = q * t + 0.37409196f;
    q = q * t + 1.00002368f;
    q = q * t - 1.26551223f;
    float big = 1.0f - t * fexp(q - z);
    big = sel(x < 0.0f, -big, big);
    return sel(ax < 0.84375f, small, sel(x != x, x, big));
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

// out[i] = LayerNorm(in[i]) for the rows this thread gets.
static void layer_norm_rows(const float* in, const float* w, const float* b, float* out, long m, long c, float eps) {
    #pragma omp for schedule(static)
    for (long i = 0; i < m; ++i) {
        const float* xr = in + i * c;
        float* yr = out + i * c;
        float s = 0.0f;
        #pragma omp simd reduction(+ : s)
        for (long j = 0; j < c; ++j) s += xr[j];
        float mean = s / (float)c;
        float q = 0.0f;
        #pragma omp simd reduction(+ : q)
        for (long j = 0; j < c; ++j) { float d = xr[j] - mean; q += d * d; }
        float rstd = 1.0f / sqrtf(q / (float)c + eps);
        #pragma omp simd
        for (long j = 0; j < c; ++j) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
    }
}

// One head of one sequence: out[t][h*d..] = softmax(q k^T / sqrt(d)) v, q/k/v rows strided in qkv.
static void attend(const float* qkv, float* out, long t, long c, long d, long h, float* scores) {
    float div = sqrtf((float)d);
    for (long i = 0; i < t; ++i) {
        const float* qi = qkv + i * 3 * c + h * d;
        float mx = -INFINITY;
        for (long j = 0; j < t; ++j) {
            const float* kj = qkv + j * 3 * c + c + h * d;
            float s = 0.0f;
            for (long e = 0; e < d; ++e) s += qi[e] * kj[e];
            scores[j] = s / div;
            mx = sel(scores[j] > mx, scores[j], mx);
        }
        float sum = 0.0f;
        #pragma omp simd reduction(+ : sum)
        for (long j = 0; j < t; ++j) {
            scores[j] = fexp(scores[j] - mx);
            sum += scores[j];
        }
        float inv = 1.0f / sum;
        float* oi = out + i * c + h * d;
        for (long e = 0; e < d; ++e) oi[e] = 0.0f;
        for (long j = 0; j < t; ++j) {
            const float* vj = qkv + j * 3 * c + 2 * c + h * d;
            float p = scores[j] * inv;
            for (long e = 0; e < d; ++e) oi[e] += p * vj[e];
        }
    }
}

extern "C" void transformer_block(const float* x, const float* ln1_w, const float* ln1_b, const float* qkv_w,
                                  const float* qkv_b, const float* proj_w, const float* proj_b, const float* ln2_w,
                                  const float* ln2_b, const float* up_w, const float* up_b, const float* down_w,
                                  const float* down_b, float* y, long batch, long t, long c, long heads, float eps) {
    long m = batch * t, d = c / heads, hid = 4 * c;
    float* h = (float*)malloc(sizeof(float) * m * c);        // LayerNorm outputs
    float* qkv = (float*)malloc(sizeof(float) * m * 3 * c);
    float* att = (float*)malloc(sizeof(float) * m * c);
    float* x1 = (float*)malloc(sizeof(float) * m * c);       // first residual stream
    float* u = (float*)malloc(sizeof(float) * m * hid);
    float* bp = (float*)malloc(sizeof(float) * gemm_scratch_floats(hid));
    #pragma omp parallel if(m * c * c >= 65536)
    {
        float* scores = (float*)malloc(sizeof(float) * t);
        layer_norm_rows(x, ln1_w, ln1_b, h, m, c, eps);
        gemm(m, 3 * c, c, h, c, 1, qkv, 3 * c, bp, StridedB{qkv_w, 1, c, 3 * c});
        #pragma omp for schedule(static)
        for (long i = 0; i < m; ++i)
            for (long j = 0; j < 3 * c; ++j) qkv[i * 3 * c + j] += qkv_b[j];
        #pragma omp for collapse(2) schedule(static)
        for (long b = 0; b < batch; ++b)
            for (long hh = 0; hh < heads; ++hh) attend(qkv + b * t * 3 * c, att + b * t * c, t, c, d, hh, scores);
        gemm(m, c, c, att, c, 1, x1, c, bp, StridedB{proj_w, 1, c, c});
        #pragma omp for schedule(static)
        for (long i = 0; i < m * c; ++i) x1[i] = x[i] + (x1[i] + proj_b[i % c]);
        layer_norm_rows(x1, ln2_w, ln2_b, h, m, c, eps);
        gemm(m, hid, c, h, c, 1, u, hid, bp, StridedB{up_w, 1, c, hid});
        #pragma omp for schedule(static)
        for (long i = 0; i < m; ++i) {
            float* row = u + i * hid;
            #pragma omp simd
            for (long j = 0; j < hid; ++j) {
                float v = row[j] + up_b[j];
                row[j] = 0.5f * v * (1.0f + ferf(v * 0.70710678118654752f));
            }
        }
        gemm(m, c, hid, u, hid, 1, y, c, bp, StridedB{down_w, 1, hid, c});
        #pragma omp for schedule(static)
        for (long i = 0; i < m * c; ++i) y[i] = x1[i] + (y[i] + down_b[i % c]);
        free(scores);
    }
    free(bp);
    free(u);
    free(x1);
    free(att);
    free(qkv);
    free(h);
}
'''

lib = load_c(SOURCE, {"transformer_block": "const float*, const float*, const float*, const float*, const float*, "
                                           "const float*, const float*, const float*, const float*, const float*, "
                                           "const float*, const float*, const float*, float*, int64, int64, int64, "
                                           "int64, float"})


class ModelNew(nn.Module):
    def __init__(self, features: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(features)
        self.qkv = nn.Linear(features, 3 * features)
        self.proj = nn.Linear(features, features)
        self.norm2 = nn.LayerNorm(features)
        self.up = nn.Linear(features, 4 * features)
        self.down = nn.Linear(4 * features, features)

    def forward(self, x):
        x = x.contiguous()
        b, t, c = x.shape
        y = torch.empty_like(x)
        lib.transformer_block(x, self.norm1.weight, self.norm1.bias, self.qkv.weight, self.qkv.bias, self.proj.weight,
                              self.proj.bias, self.norm2.weight, self.norm2.bias, self.up.weight, self.up.bias,
                              self.down.weight, self.down.bias, y, b, t, c, self.heads, self.norm1.eps)
        return y
