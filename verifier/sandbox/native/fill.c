/* Random fills for the timed calls' input sets (verifier.sandbox.fast_fill): uniform [0, 1) and standard
 * normal float32, from a seed, several times faster than torch's CPU generator (a scalar Mersenne
 * Twister: ~5 ns an element for randn on the machine this was measured on, against ~1.5 here).
 *
 * Sixteen xoshiro256+ streams advance side by side (the loop vectorises), each 64-bit output gives two
 * 24-bit floats, the way torch makes a float from 24 random bits; normals by Box-Muller, two per pair of
 * uniforms, with the logarithm and cosine vectorised by the compiler (glibc's libmvec). Only the
 * trusted reference worker calls this, on memory it owns; nothing here decides anything.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define LANES 16
#define TWO_PI 6.28318530717958647692f
#define INV_2_24 (1.0f / 16777216.0f)

typedef struct {
    uint64_t s[4][LANES];
} streams;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void seed_streams(streams *st, uint64_t seed) {
    uint64_t x = seed;
    for (int j = 0; j < 4; j++)
        for (int l = 0; l < LANES; l++) st->s[j][l] = splitmix64(&x);
}

static inline void next_block(streams *restrict st, uint64_t *restrict out) {
#pragma omp simd
    for (int l = 0; l < LANES; l++) {
        uint64_t s0 = st->s[0][l], s1 = st->s[1][l], s2 = st->s[2][l], s3 = st->s[3][l];
        uint64_t result = s0 + s3, t = s1 << 17;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = (s3 << 45) | (s3 >> 19);
        st->s[0][l] = s0;
        st->s[1][l] = s1;
        st->s[2][l] = s2;
        st->s[3][l] = s3;
        out[l] = result;
    }
}

/* two 24-bit integers from one output: its high 24 bits and bits 8-31 (xoshiro256+'s lowest bits are
 * its weakest); as int32 so that the conversion to float vectorises */
static inline int32_t high24(uint64_t v) { return (int32_t)(v >> 40); }
static inline int32_t low24(uint64_t v) { return (int32_t)((v >> 8) & 0xFFFFFFu); }

/* Uniforms as torch makes them for float32: k / 2^24, k < 2^24. */
static inline void uniform_block(streams *st, float *block) {
    uint64_t r[LANES];
    next_block(st, r);
    for (int l = 0; l < LANES; l++) {
        block[l] = (float)high24(r[l]) * INV_2_24;
        block[LANES + l] = (float)low24(r[l]) * INV_2_24;
    }
}

void evokernel_fill_uniform_f32(float *out, size_t n, uint64_t seed) {
    streams st;
    float block[2 * LANES];
    size_t i = 0;
    seed_streams(&st, seed);
    while (i < n) {
        uniform_block(&st, block);
        if (n - i >= 2 * LANES) {
            for (int k = 0; k < 2 * LANES; k++) out[i + k] = block[k];
            i += 2 * LANES;
            continue;
        }
        for (int k = 0; k < 2 * LANES && i < n; k++) out[i++] = block[k];
    }
}

/* torch's normal_fill_16 on 16 uniforms: element j and j + 8 (j < 8) share a radius, from 1 - u[j], and
 * an angle, from u[j + 8]; the same pairing as torch's, so a set drawn here looks like one torch drew. */
static inline void normal_16(const float *u, float *out) {
#pragma omp simd
    for (int j = 0; j < 8; j++) {
        float radius = sqrtf(-2.0f * logf(1.0f - u[j]));
        float theta = TWO_PI * u[j + 8];
        out[j] = radius * cosf(theta);
        out[j + 8] = radius * cosf(theta - 0.5f * 3.14159265358979323846f); /* the sine, as one more cosine */
    }
}

/* n >= 16 (torch draws fewer elements another way): every 16-element block from fresh uniforms, and where
 * n is not a multiple of 16 the last 16 elements once more, as torch does. */
void evokernel_fill_normal_f32(float *out, size_t n, uint64_t seed) {
    streams st;
    float block[2 * LANES];
    size_t i = 0;
    seed_streams(&st, seed);
    if (n < 16) return;
    while (i + 16 <= n) {
        uniform_block(&st, block);
        normal_16(block, out + i);
        i += 16;
        if (i + 16 <= n) {
            normal_16(block + 16, out + i);
            i += 16;
        }
    }
    if (i < n) {
        uniform_block(&st, block);
        normal_16(block, out + n - 16);
    }
}
