"""Known-good CPU solution for L2/005_conv2d_groupnorm_tanh: the convolution (implicit GEMM over
the input, 6 channels x 16 pixels per register tile, bias on store) writes the output once; then
each (sample, group) block gets a two-pass mean/variance and one fused normalise-affine-tanh pass
while it is in cache. Parameters come from the nn.Conv2d and nn.GroupNorm."""

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

// tanh(x): odd polynomial below |x| = 0.625 (Cephes; nearly always correctly rounded there, which
// matters for tiny inputs where tanh(x) ~ x), 1 - 2 / (exp(2|x|) + 1) above, sign restored.
static inline float ftanh(float x) {
    float ax = sel(x < 0.0f, -x, x);
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = x + x * z * p;
    float e = fexp(2.0f * sel(ax > 20.0f, 20.0f, ax));
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = sel(x < 0.0f, -big, big);
    return sel(ax < 0.625f, small, sel(x != x, x, big));
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

struct AddBias {
    const float* b;
    float operator()(float v, long oc, long) const { return v + b[oc]; }
};

extern "C" void conv_gn_tanh(const float* x, const float* w, const float* b, const float* gamma, const float* beta,
                             float* y, long batch, long cin, long h, long wd, long cout, long k, long groups,
                             float eps) {
    long oh = h - k + 1, ow = wd - k + 1, npix = oh * ow, kdim = cin * k * k, cpg = cout / groups;
    long* off = (long*)malloc(sizeof(long) * kdim);
    conv_offsets(cin, k, k, 1, h, wd, off);
    float* xpad = (float*)malloc(sizeof(float) * (cin * h * wd + PXB));  // no padding, but tile slack
    #pragma omp parallel
    {
        for (long n = 0; n < batch; ++n) {
            pad_image(x + n * cin * h * wd, cin, h, wd, 0, xpad);
            conv_s1(xpad, wd, off, kdim, w, cout, y + n * cout * npix, oh, ow, AddBias{b});
            #pragma omp barrier
        }
        long len = cpg * npix;
        #pragma omp for schedule(static)
        for (long blk = 0; blk < batch * groups; ++blk) {
            float* yb = y + blk * len;
            double s = 0.0;
            #pragma omp simd reduction(+ : s)
            for (long i = 0; i < len; ++i) s += yb[i];
            float mean = (float)(s / (double)len);
            double q = 0.0;
            #pragma omp simd reduction(+ : q)
            for (long i = 0; i < len; ++i) { float d = yb[i] - mean; q += (double)(d * d); }
            float rstd = (float)(1.0 / sqrt(q / (double)len + (double)eps));
            long g = blk % groups;
            for (long c = 0; c < cpg; ++c) {
                long ch = g * cpg + c;
                float a = rstd * gamma[ch], sh = beta[ch] - mean * a;
                float* plane = yb + c * npix;
                #pragma omp simd
                for (long i = 0; i < npix; ++i) plane[i] = ftanh(plane[i] * a + sh);
            }
        }
    }
    free(xpad);
    free(off);
}
'''

lib = load_c(SOURCE, {"conv_gn_tanh": "const float*, const float*, const float*, const float*, const float*, float*, "
                                      "int64, int64, int64, int64, int64, int64, int64, float"})


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        x = x.contiguous()
        batch, cin, h, w = x.shape
        cout, _, k, _ = self.conv.weight.shape
        y = torch.empty(batch, cout, h - k + 1, w - k + 1, dtype=x.dtype)
        lib.conv_gn_tanh(x, self.conv.weight, self.conv.bias, self.norm.weight, self.norm.bias, y, batch, cin, h, w,
                         cout, k, self.norm.num_groups, self.norm.eps)
        return y
