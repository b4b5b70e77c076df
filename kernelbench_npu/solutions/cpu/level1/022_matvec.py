"""Known-good CPU solution for L1/022_matvec (A [m x k] times v [k x 1]): memory-bound, so each
row of A is read once: four rows per step share every vector load of v (8-wide accumulators,
horizontal sums at the end), row blocks over the OpenMP pool."""

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

extern "C" void matvec(const float* __restrict a, const float* __restrict v, float* __restrict y, long m, long k) {
    #pragma omp parallel for schedule(static) if(m * k >= 65536)
    for (long i = 0; i < m; i += 4) {
        long rows = m - i < 4 ? m - i : 4;
        const float* r[4];
        for (int t = 0; t < 4; ++t) r[t] = a + (i + (t < rows ? t : rows - 1)) * k;
        v8 acc[4] = {};
        long p = 0;
        for (; p + 8 <= k; p += 8) {
            v8 vv = load8(v + p);
            for (int t = 0; t < 4; ++t) acc[t] += load8(r[t] + p) * vv;
        }
        for (long t = 0; t < rows; ++t) {
            float s = hsum8(acc[t]);
            for (long q = p; q < k; ++q) s += r[t][q] * v[q];
            y[i + t] = s;
        }
    }
}
'''

lib = load_c(SOURCE, {"matvec": "const float*, const float*, float*, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, v):
        a, v = a.contiguous(), v.contiguous()
        m, k = a.shape
        y = torch.empty(m, 1, dtype=a.dtype)
        lib.matvec(a, v, y, m, k)
        return y
