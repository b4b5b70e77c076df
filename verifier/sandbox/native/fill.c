/* Random fills for the timed calls' input sets (verifier.sandbox.fast_fill): uniform [0, 1) and standard
 * normal float32, from a seed, several times faster than torch's CPU generator (a scalar Mersenne
 * Twister: ~5 ns an element for randn on the machine this was first measured on).
 *
 * Sixteen xoshiro128+ streams advance side by side in 32-bit lanes (the loop vectorises to whole
 * registers on any SIMD width), each output's high 24 bits one float k / 2^24, the way torch makes a
 * float32 from 24 random bits (xoshiro128+ is its authors' generator for 32-bit floats: the low bits,
 * its weakest, are dropped). Normals by Box-Muller, two per pair of uniforms, paired as torch pairs
 * them; the logarithm and the angle's cosine and sine are polynomials (cephes' logf and sinf/cosf on
 * [-pi/4, pi/4], about an ulp), written so that the compiler vectorises them: the angle 2 pi u needs no
 * general range reduction, u being in [0, 1), so the quarter turn nearest it is taken off exactly.
 * Until 2026-12-02 the fill used xoshiro256+ in 64-bit lanes and libmvec's logf and cosf: 2.47 ns a
 * normal and 0.74-0.91 ns a uniform (one thread, 512 Ki elements), against 1.16 and 0.19 now.
 * Only the trusted reference worker calls this, on memory it owns; nothing here decides anything.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LANES 16
#define INV_2_24 (1.0f / 16777216.0f)
#define TWO_PI 6.28318530717958647692f

typedef struct {
    uint32_t s[4][LANES];
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
        for (int l = 0; l < LANES; l++) st->s[j][l] = (uint32_t)(splitmix64(&x) >> 32);
    for (int l = 0; l < LANES; l++) /* an all-zero state never leaves zero */
        if ((st->s[0][l] | st->s[1][l] | st->s[2][l] | st->s[3][l]) == 0) st->s[0][l] = 1;
}

/* LANES uniforms k / 2^24 (k < 2^24, torch's float32 grid), one per lane: xoshiro128+'s high 24 bits */
static inline void uniforms(streams *restrict st, float *restrict out) {
#pragma omp simd
    for (int l = 0; l < LANES; l++) {
        uint32_t s0 = st->s[0][l], s1 = st->s[1][l], s2 = st->s[2][l], s3 = st->s[3][l];
        uint32_t result = s0 + s3, t = s1 << 9;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = (s3 << 11) | (s3 >> 21);
        st->s[0][l] = s0;
        st->s[1][l] = s1;
        st->s[2][l] = s2;
        st->s[3][l] = s3;
        out[l] = (float)(int32_t)(result >> 8) * INV_2_24;
    }
}

static inline float from_bits(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static inline uint32_t to_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

/* natural log of x in [2^-24, 1] (cephes logf's polynomial, ~1 ulp) */
static inline float log_unit(float x) {
    uint32_t ix = to_bits(x);
    int32_t e = (int32_t)(ix >> 23) - 126;            /* x = m * 2^e, m in [0.5, 1) */
    float m = from_bits((ix & 0x007fffffu) | 0x3f000000u);
    int small = m < 0.70710678f;
    e -= small;
    m = small ? m + m : m;                          /* m in [sqrt(1/2), sqrt(2)) */
    float f = m - 1.0f, z = f * f, fe = (float)e;
    float y = 7.0376836292E-2f;
    y = y * f - 1.1514610310E-1f;
    y = y * f + 1.1676998740E-1f;
    y = y * f - 1.2420140846E-1f;
    y = y * f + 1.4249322787E-1f;
    y = y * f - 1.6668057665E-1f;
    y = y * f + 2.0000714765E-1f;
    y = y * f - 2.4999993993E-1f;
    y = y * f + 3.3333331174E-1f;
    y = y * f * z;
    y += -2.12194440E-4f * fe;
    y += -0.5f * z;
    return f + y + 0.693359375f * fe;
}

/* cos and sin of 2 pi v, v in [0, 1): the quarter turn v lies nearest, then cephes' polynomials on
 * [-pi/4, pi/4] */
static inline void turn(float v, float *c_out, float *s_out) {
    int32_t q = (int32_t)(v * 4.0f + 0.5f);           /* 0..4 */
    float a = (v - (float)q * 0.25f) * TWO_PI;        /* [-pi/4, pi/4] */
    float z = a * a;
    float s = a + a * z * (-1.6666654611E-1f + z * (8.3321608736E-3f + z * -1.9515295891E-4f));
    float c = 1.0f - 0.5f * z + z * z * (4.166664568298827E-2f + z * (-1.388731625493765E-3f + z * 2.443315711809948E-5f));
    int k = q & 3;
    float cc = (k & 1) ? s : c, ss = (k & 1) ? c : s;
    *c_out = (k == 1 || k == 2) ? -cc : cc;
    *s_out = (k >= 2) ? -ss : ss;
}

void evokernel_fill_uniform_f32(float *out, size_t n, uint64_t seed) {
    streams st;
    float block[LANES];
    size_t i = 0;
    seed_streams(&st, seed);
    for (; i + LANES <= n; i += LANES) uniforms(&st, out + i);
    if (i < n) {
        uniforms(&st, block);
        for (int k = 0; i < n; k++) out[i++] = block[k];
    }
}

/* torch's normal_fill_16 on 16 uniforms: element j and j + 8 (j < 8) share a radius, from 1 - u[j], and
 * an angle, from u[j + 8]; the same pairing as torch's, so a set drawn here looks like one torch drew. */
static inline void normal_16(streams *restrict st, float *restrict out) {
    float u[LANES];
    uniforms(st, u);
#pragma omp simd
    for (int j = 0; j < 8; j++) {
        float radius = sqrtf(-2.0f * log_unit(1.0f - u[j]));
        float c, s;
        turn(u[j + 8], &c, &s);
        out[j] = radius * c;
        out[j + 8] = radius * s;
    }
}

/* n >= 16 (torch draws fewer elements another way): every 16-element block from fresh uniforms, and where
 * n is not a multiple of 16 the last 16 elements once more, as torch does. */
void evokernel_fill_normal_f32(float *out, size_t n, uint64_t seed) {
    streams st;
    size_t i = 0;
    seed_streams(&st, seed);
    if (n < 16) return;
    for (; i + 16 <= n; i += 16) normal_16(&st, out + i);
    if (i < n) normal_16(&st, out + n - 16);
}
