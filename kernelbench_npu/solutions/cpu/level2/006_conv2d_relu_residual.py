"""Known-good CPU solution for L2/006_conv2d_relu_residual: x + relu(conv(x) + b) in one kernel:
implicit-GEMM convolution over a zero-padded input copy (6 channels x 16 pixels per register
tile) whose store adds the bias, applies the relu and adds the residual input."""

import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r'''
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

struct BiasReluResidual {
    const float *bias, *x;  // x: this image's input, [cout][oh][ow] (same shape as the output)
    long npix;
    float operator()(float v, long oc, long pixel) const {
        float z = v + bias[oc];
        return x[oc * npix + pixel] + (z < 0.0f ? 0.0f : z);
    }
};

extern "C" void conv_relu_residual(const float* x, const float* w, const float* b, float* y, long batch, long c,
                                   long h, long wd, long k) {
    long pad = k / 2, ph = h + 2 * pad, pw = wd + 2 * pad, kdim = c * k * k;
    long* off = (long*)malloc(sizeof(long) * kdim);
    conv_offsets(c, k, k, 1, ph, pw, off);
    float* xpad = (float*)malloc(sizeof(float) * (c * ph * pw + PXB));
    #pragma omp parallel
    for (long n = 0; n < batch; ++n) {
        const float* xn = x + n * c * h * wd;
        pad_image(xn, c, h, wd, pad, xpad);
        conv_s1(xpad, pw, off, kdim, w, c, y + n * c * h * wd, h, wd, BiasReluResidual{b, xn, h * wd});
        #pragma omp barrier
    }
    free(xpad);
    free(off);
}
'''

lib = load_c(SOURCE, {"conv_relu_residual": "const float*, const float*, const float*, float*, int64, int64, int64, "
                                            "int64, int64"})


class ModelNew(nn.Module):
    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        x = x.contiguous()
        batch, c, h, w = x.shape
        y = torch.empty_like(x)
        lib.conv_relu_residual(x, self.conv.weight, self.conv.bias, y, batch, c, h, w, self.conv.kernel_size[0])
        return y
