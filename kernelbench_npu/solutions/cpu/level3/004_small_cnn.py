"""Known-good CPU solution for L3/004_small_cnn: both conv stages are implicit-GEMM convolutions
over zero-padded input copies (6 channels x 16 pixels per register tile) with bias + relu on
store, each followed by a 2x2 max pool pass; the two linear layers are small-batch dot-product
GEMMs (4 rows x 2 weight rows in registers) with bias/relu fused. One OpenMP region; parameters
are read from the nn.Sequential containers (built, never called)."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
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

// 8-float vectors (GCC/Clang vector extension: one AVX2 register, two SSE or NEON registers);
// loads and stores go through memcpy, so any alignment is fine.
typedef float v8 __attribute__((vector_size(32)));

static inline v8 load8(const float* p) { v8 v; memcpy(&v, p, sizeof v); return v; }
static inline void store8(float* p, v8 v) { memcpy(p, &v, sizeof v); }
static inline float hsum8(v8 v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// ---- Stride-1 2-D convolution as an implicit GEMM over a zero-padded copy of the input ------
// out[oc][oh][ow] = sum_p w[oc][p] * xpad[off[p] + oh * PW + ow], p = (ic, kh, kw), off[p] =
// ic * PH * PW + kh * dil * PW + kw * dil. A tile is 6 output channels x 16 adjacent output pixels
// in 12 vector accumulators; its B rows are read straight from the padded input (two unaligned
// vector loads per p), so nothing is packed. epi(value, oc, pixel) finishes each output.
constexpr long OCB = 6, PXB = 16;

// xpad: [C][PH][PW] plus PXB floats of slack (a trimmed tile may read past its row, never stores it).
static void pad_image(const float* x, long c, long h, long w, long pad, float* xpad) {
    long ph = h + 2 * pad, pw = w + 2 * pad;
    #pragma omp for schedule(static)
    for (long ch = 0; ch < c; ++ch) {
        float* dst = xpad + ch * ph * pw;
        memset(dst, 0, sizeof(float) * ph * pw);
        for (long i = 0; i < h; ++i) memcpy(dst + (i + pad) * pw + pad, x + (ch * h + i) * w, sizeof(float) * w);
    }
}

template <class Epi>
static void conv_s1(const float* xpad, long pw, const long* off, long kdim, const float* w, long cout, float* y,
                    long oh, long ow, Epi epi) {
    // Output pixels are walked on the padded grid (row pitch pw), so a tile of 16 is contiguous in
    // xpad even across rows; the pw - ow columns per row that fall in the padding are not stored.
    long span = (oh - 1) * pw + ow, oblocks = (cout + OCB - 1) / OCB, pblocks = (span + PXB - 1) / PXB;
    #pragma omp for collapse(2) schedule(static)
    for (long ob = 0; ob < oblocks; ++ob)
        for (long pb = 0; pb < pblocks; ++pb) {
            long oc0 = ob * OCB, j0 = pb * PXB;
            long rows = cout - oc0 < OCB ? cout - oc0 : OCB, cols = span - j0 < PXB ? span - j0 : PXB;
            const float* wr[OCB];
            for (int r = 0; r < OCB; ++r) wr[r] = w + (oc0 + (r < rows ? r : rows - 1)) * kdim;
            v8 c0[OCB], c1[OCB];
            for (int r = 0; r < OCB; ++r) c0[r] = c1[r] = (v8){};
            const float* base = xpad + j0;
            for (long p = 0; p < kdim; ++p) {
                v8 b0 = load8(base + off[p]), b1 = load8(base + off[p] + 8);
                for (int r = 0; r < OCB; ++r) {
                    float a = wr[r][p];
                    c0[r] += a * b0;
                    c1[r] += a * b1;
                }
            }
            for (long r = 0; r < rows; ++r) {
                float t[PXB];
                store8(t, c0[r]);
                store8(t + 8, c1[r]);
                long oc = oc0 + r, i = j0 / pw, jj = j0 % pw;
                float* plane = y + oc * oh * ow;
                for (long j = 0; j < cols; ++j) {
                    if (jj < ow) plane[i * ow + jj] = epi(t[j], oc, i * ow + jj);
                    if (++jj == pw) { jj = 0; ++i; }
                }
            }
        }
}

// off[p] for p = (ic, kh, kw) of a [cin][kh][kw] kernel over a padded [cin][ph][pw] image.
static void conv_offsets(long cin, long kh, long kw, long dil, long ph, long pw, long* off) {
    for (long ic = 0; ic < cin; ++ic)
        for (long u = 0; u < kh; ++u)
            for (long v = 0; v < kw; ++v) off[(ic * kh + u) * kw + v] = ic * ph * pw + u * dil * pw + v * dil;
}

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

struct BiasRelu {
    const float* b;
    float operator()(float v, long oc, long) const {
        float z = v + b[oc];
        return z < 0.0f ? 0.0f : z;
    }
};

// 2x2 max pool, stride 2: planes of [h][w] -> [h/2][w/2].
static void max_pool2(const float* in, float* out, long planes, long h, long w) {
    long oh = h / 2, ow = w / 2;
    #pragma omp for schedule(static)
    for (long p = 0; p < planes; ++p)
        for (long i = 0; i < oh; ++i) {
            const float* r0 = in + (p * h + 2 * i) * w;
            const float* r1 = r0 + w;
            float* o = out + (p * oh + i) * ow;
            for (long j = 0; j < ow; ++j) {
                float a = sel(r0[2 * j + 1] > r0[2 * j], r0[2 * j + 1], r0[2 * j]);
                float b = sel(r1[2 * j + 1] > r1[2 * j], r1[2 * j + 1], r1[2 * j]);
                o[j] = sel(b > a, b, a);
            }
        }
}

// One conv stage for one image: pad, convolve with bias + relu into act, pool into out.
static void conv_stage(const float* in, long cin, long h, long w, const float* wt, const float* b, long cout, long k,
                       const long* off, float* xpad, float* act, float* out) {
    long pad = k / 2, pw = w + 2 * pad;
    pad_image(in, cin, h, w, pad, xpad);
    conv_s1(xpad, pw, off, cin * k * k, wt, cout, act, h, w, BiasRelu{b});
    max_pool2(act, out, cout, h, w);
}

extern "C" void small_cnn(const float* x, const float* w1, const float* b1, const float* w2, const float* b2,
                          const float* w3, const float* b3, const float* w4, const float* b4, float* y, long batch,
                          long cin, long size, long c1, long k1, long c2, long k2, long hidden, long classes) {
    long s2 = size / 2, s4 = size / 4, p1 = k1 / 2, p2 = k2 / 2, feat = c2 * s4 * s4;
    long* off1 = (long*)malloc(sizeof(long) * cin * k1 * k1);
    long* off2 = (long*)malloc(sizeof(long) * c1 * k2 * k2);
    conv_offsets(cin, k1, k1, 1, size + 2 * p1, size + 2 * p1, off1);
    conv_offsets(c1, k2, k2, 1, s2 + 2 * p2, s2 + 2 * p2, off2);
    long pad1 = cin * (size + 2 * p1) * (size + 2 * p1), pad2 = c1 * (s2 + 2 * p2) * (s2 + 2 * p2);
    float* xpad = (float*)malloc(sizeof(float) * ((pad1 > pad2 ? pad1 : pad2) + PXB));
    long act1 = c1 * size * size, act2 = c2 * s2 * s2;
    float* act = (float*)malloc(sizeof(float) * (act1 > act2 ? act1 : act2));
    float* pool1 = (float*)malloc(sizeof(float) * c1 * s2 * s2);
    float* feats = (float*)malloc(sizeof(float) * batch * feat);
    float* h1 = (float*)malloc(sizeof(float) * batch * hidden);
    #pragma omp parallel
    {
        for (long n = 0; n < batch; ++n) {
            conv_stage(x + n * cin * size * size, cin, size, size, w1, b1, c1, k1, off1, xpad, act, pool1);
            conv_stage(pool1, c1, s2, s2, w2, b2, c2, k2, off2, xpad, act, feats + n * feat);
        }
        linear_nt(feats, w3, h1, batch, feat, hidden);
        #pragma omp for schedule(static)
        for (long i = 0; i < batch * hidden; ++i) {
            float z = h1[i] + b3[i % hidden];
            h1[i] = z < 0.0f ? 0.0f : z;
        }
        linear_nt(h1, w4, y, batch, hidden, classes);
        #pragma omp for schedule(static)
        for (long i = 0; i < batch * classes; ++i) y[i] += b4[i % classes];
    }
    free(h1);
    free(feats);
    free(pool1);
    free(act);
    free(xpad);
    free(off2);
    free(off1);
}
'''

lib = load_c(SOURCE, {"small_cnn": "const float*, const float*, const float*, const float*, const float*, "
                                   "const float*, const float*, const float*, const float*, float*, int64, int64, "
                                   "int64, int64, int64, int64, int64, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, image_size: int, num_classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * (image_size // 4) ** 2, 256), nn.ReLU(), nn.Linear(256, num_classes),
        )

    def forward(self, x):
        x = x.contiguous()
        batch, cin, size, _ = x.shape
        conv1, conv2 = self.features[0], self.features[3]
        fc1, fc2 = self.classifier[1], self.classifier[3]
        y = torch.empty(batch, fc2.out_features, dtype=x.dtype)
        lib.small_cnn(x, conv1.weight, conv1.bias, conv2.weight, conv2.bias, fc1.weight, fc1.bias, fc2.weight,
                      fc2.bias, y, batch, cin, size, conv1.out_channels, conv1.kernel_size[0], conv2.out_channels,
                      conv2.kernel_size[0], fc1.out_features, fc2.out_features)
        return y
