"""Known-good CPU solution for L2/004_conv2d_batchnorm_relu: one fused kernel. The eval-mode
BatchNorm folds into a per-channel scale and shift; the stride-1 convolution is an implicit GEMM
over a zero-padded input copy (6 channels x 16 pixels per register tile) whose store applies
(conv + bias) * scale + shift and the relu. Parameters come from the nn.Conv2d and nn.BatchNorm2d."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

struct BiasNormRelu {
    const float *bias, *scale, *shift;
    float operator()(float v, long oc, long) const {
        float z = (v + bias[oc]) * scale[oc] + shift[oc];
        return z < 0.0f ? 0.0f : z;
    }
};

extern "C" void conv_bn_relu(const float* x, const float* w, const float* b, const float* mean, const float* var,
                             const float* gamma, const float* beta, float* y, long batch, long cin, long h, long wd,
                             long cout, long k, long pad, float eps) {
    long ph = h + 2 * pad, pw = wd + 2 * pad, oh = ph - k + 1, ow = pw - k + 1, kdim = cin * k * k;
    long* off = (long*)malloc(sizeof(long) * kdim);
    float* scale = (float*)malloc(sizeof(float) * cout * 2);
    float* shift = scale + cout;
    for (long c = 0; c < cout; ++c) {
        scale[c] = gamma[c] / sqrtf(var[c] + eps);
        shift[c] = beta[c] - mean[c] * scale[c];
    }
    conv_offsets(cin, k, k, 1, ph, pw, off);
    float* xpad = (float*)malloc(sizeof(float) * (cin * ph * pw + PXB));
    #pragma omp parallel
    for (long n = 0; n < batch; ++n) {
        pad_image(x + n * cin * h * wd, cin, h, wd, pad, xpad);
        conv_s1(xpad, pw, off, kdim, w, cout, y + n * cout * oh * ow, oh, ow, BiasNormRelu{b, scale, shift});
        #pragma omp barrier
    }
    free(xpad);
    free(scale);
    free(off);
}
'''

lib = load_c(SOURCE, {"conv_bn_relu": "const float*, const float*, const float*, const float*, const float*, "
                                      "const float*, const float*, float*, int64, int64, int64, int64, int64, int64, "
                                      "int64, float"})


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.norm = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.norm.running_mean.copy_(0.1 * torch.randn(out_channels))
            self.norm.running_var.copy_(0.5 + torch.rand(out_channels))

    def forward(self, x):
        x = x.contiguous()
        batch, cin, h, w = x.shape
        cout, _, k, _ = self.conv.weight.shape
        pad = self.conv.padding[0]
        y = torch.empty(batch, cout, h + 2 * pad - k + 1, w + 2 * pad - k + 1, dtype=x.dtype)
        bn = self.norm
        lib.conv_bn_relu(x, self.conv.weight, self.conv.bias, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                         y, batch, cin, h, w, cout, k, pad, bn.eps)
        return y
