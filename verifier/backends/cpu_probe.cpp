// Peak probes of the CPU backend (verifier.backends.cpu_probe), built with the fast loader's flags.
//
// triad_gbs: STREAM triad a = b + s*c over three arrays of n floats, bytes counted as STREAM does
// (3 * 4 per element). All threads run at once, each on its own contiguous part of the arrays, and
// each times its own units of about `window` / threads elements: for a part below that, repeated
// sweeps over it (a cache-sized part stays in that core's caches; sweeps alternate between writing
// a and writing b, so none is a dead store); for a larger part, consecutive windows, each timed on
// its own (cold: last touched a whole pass ago), in as many passes as make `reps` units (one pass over a
// working set of 4 GB, where 31 passes took 8 s of a 19 s probe on a 480 MiB L3). The result is the sum
// over threads of each thread's best unit: short units, best kept, because a short unit is likelier to run undisturbed
// on a shared machine; where threads share a level (last-level cache, memory) and their best units
// did not overlap, the sum overstates that level's bandwidth, never understates it.
// fma_gflops: independent FMA chains per thread (enough to hide the FMA latency on two pipes),
// 2 FLOPs per lane per FMA, best unit per thread, summed over threads.
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>

static double thread_triad_best(float* a, float* b, const float* c, long lo, long hi, long window, int reps) {
    long part = hi - lo, unit = part < window ? part : window, sweeps = part < window ? window / part : 1;
    long units = part / unit, passes = (reps + units - 1) / units;  // at least `reps` units in all, not per pass
    double best = 0.0;
    for (long r = 0; r < passes; ++r) {
        for (long start = lo; start + unit <= hi; start += unit) {
            double t0 = omp_get_wtime();
            for (long k = 0; k < sweeps; ++k) {
                if (k % 2 == 0) {
                    #pragma omp simd
                    for (long i = start; i < start + unit; ++i) a[i] = b[i] + 0.5f * c[i];
                } else {
                    #pragma omp simd
                    for (long i = start; i < start + unit; ++i) b[i] = a[i] - 0.5f * c[i];
                }
            }
            double gbs = 3.0 * 4.0 * (double)unit * (double)sweeps / (omp_get_wtime() - t0) / 1e9;
            if (gbs > best) best = gbs;
        }
    }
    return best;
}

extern "C" double triad_gbs(long n, long window, int reps, int threads) {
    size_t bytes = ((n * 4 + 63) / 64) * 64;
    float* a = (float*)aligned_alloc(64, bytes);
    float* b = (float*)aligned_alloc(64, bytes);
    float* c = (float*)aligned_alloc(64, bytes);
    if (!a || !b || !c) { free(a); free(b); free(c); return 0.0; }
    double total = 0.0;
    #pragma omp parallel num_threads(threads) reduction(+:total)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        long lo = n * t / nt, hi = n * (t + 1) / nt;
        for (long i = lo; i < hi; ++i) { a[i] = 0.0f; b[i] = 1.0f; c[i] = 0.5f; }  // first touch: own part
        if (hi > lo) total += thread_triad_best(a, b, c, lo, hi, window / nt > 1 ? window / nt : 1, reps);
    }
    volatile float keep = a[n / 2] + b[n / 3];
    (void)keep;
    free(a); free(b); free(c);
    return total;
}

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define MULADD(x, m, a) _mm512_fmadd_ps(x, m, a)
#define STORE _mm512_storeu_ps
#elif defined(__AVX__)
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#if defined(__FMA__)
#define MULADD(x, m, a) _mm256_fmadd_ps(x, m, a)
#else
#define MULADD(x, m, a) _mm256_add_ps(_mm256_mul_ps(x, m), a)
#endif
#define STORE _mm256_storeu_ps
#else
typedef __m128 vec;
#define LANES 4
#define SET1 _mm_set1_ps
#define MULADD(x, m, a) _mm_add_ps(_mm_mul_ps(x, m), a)
#define STORE _mm_storeu_ps
#endif
#define CHAINS 12

static double thread_fma_best(long iters, int reps, float seed, float* sink) {
    double best = 0.0;
    for (int r = 0; r < reps; ++r) {
        vec acc[CHAINS];
        for (int j = 0; j < CHAINS; ++j) acc[j] = SET1(0.001f * (float)j + seed);
        const vec m = SET1(0.9999f), add = SET1(0.001f);
        double t0 = omp_get_wtime();
        for (long k = 0; k < iters; ++k) {
            #pragma GCC unroll 12
            for (int j = 0; j < CHAINS; ++j) acc[j] = MULADD(acc[j], m, add);
        }
        double gflops = 2.0 * LANES * CHAINS * (double)iters / (omp_get_wtime() - t0) / 1e9;
        if (gflops > best) best = gflops;
        float out[LANES];
        for (int j = 0; j < CHAINS; ++j) {
            STORE(out, acc[j]);
            for (int l = 0; l < LANES; ++l) *sink += out[l];
        }
    }
    return best;
}

extern "C" double fma_gflops(long iters, int reps, int threads) {
    double total = 0.0;
    float sink = 0.0f;
    #pragma omp parallel num_threads(threads) reduction(+:total, sink)
    total += thread_fma_best(iters, reps, 0.01f * (float)omp_get_thread_num(), &sink);
    volatile float keep = sink;
    (void)keep;
    return total;
}

extern "C" int vector_lanes() { return LANES; }
