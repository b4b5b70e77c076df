"""Measurements behind the fp64 reference rule (verifier/gates/fp64_check.py): how far real
kernels land from a float64 reference, honest fp32 ones against half-precision ones.

Every case is a real C kernel built by the CPU backend's loader (verifier.cpu_native, the flags
candidates get) and run on the verifier's input distributions (normal, large = x1e3, small =
x1e-3, negative). Per case and distribution it prints, for the candidate ``c``, the float32 torch
reference ``r`` and the float64 reference ``r64`` (inputs and parameters upcast):

- ``rel c``: ||c - r64|| / ||r64||, the candidate's relative error against float64;
- ``rel ref``: ||r - r64|| / ||r64||, the float32 reference's own;
- ``work``: input elements per output element (the reduction length the floor allows for);
- ``ratio``: the rule's figure, ||c - r64|| / max(||r - r64||, floor) (verifier.gates.fp64_check).

With ``--fixtures`` it runs the fixture corpus's honest kernels and precision-downgrade hacks
(tests/fixtures/kernels/honest_*, hack_a10_*; the static precision check off, so the runtime
figure is measured) through the real verifier and prints the float64 ratio each verdict reports.

Run: .venv/bin/python -m benchmarks.fp64_ratios [--json] [--fixtures]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from verifier.cpu_native import load_c
from verifier.gates.fp64_check import ratio_to_reference

SOURCE = r"""
#include <cmath>
#include <cstring>
static inline float to_half(float v) { return (float)(_Float16)v; }
static inline float to_bf16(float v) {  // round to nearest even on the upper 16 bits
    unsigned u; std::memcpy(&u, &v, 4); u += 0x7FFF + ((u >> 16) & 1); u &= 0xFFFF0000u;
    float r; std::memcpy(&r, &u, 4); return r;
}
static inline float exp_poly5(float x) {  // Cephes-style expf: range reduction + degree-5 polynomial
    float k = std::nearbyint(x * 1.44269504f); float r = x - k * 0.693359375f + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f; p = p * r + 1.3981999507e-3f; p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f; p = p * r + 1.6666665459e-1f; p = p * r + 5.0000001201e-1f;
    return std::ldexp(p * r * r + r + 1.0f, (int)k);
}
static inline float exp_poly3(float x) {  // cruder: degree-3 polynomial (relative error ~1e-5)
    float k = std::nearbyint(x * 1.44269504f); float r = x - k * 0.69314718f;
    float p = ((0.0416666f * r + 0.1666667f) * r + 0.5f) * r * r + r + 1.0f;
    return std::ldexp(p, (int)k);
}
extern "C" {
void scale_add(const float* x, const float* y, float* o, long n) {
    #pragma omp parallel for simd
    for (long i = 0; i < n; ++i) o[i] = 2.0f * x[i] + y[i];
}
void scale_add_fp16(const float* x, const float* y, float* o, long n) {
    for (long i = 0; i < n; ++i) { _Float16 a = (_Float16)x[i], b = (_Float16)y[i]; o[i] = (float)(a + a + b); }
}
void rowsum_serial(const float* x, float* o, long rows, long cols) {
    for (long r = 0; r < rows; ++r) { float s = 0; for (long c = 0; c < cols; ++c) s += x[r * cols + c]; o[r] = s; }
}
void rowsum_omp(const float* x, float* o, long rows, long cols) {
    #pragma omp parallel for
    for (long r = 0; r < rows; ++r) {
        float s = 0;
        #pragma omp simd reduction(+:s)
        for (long c = 0; c < cols; ++c) s += x[r * cols + c];
        o[r] = s;
    }
}
void rowsum_fp16_inputs(const float* x, float* o, long rows, long cols) {
    for (long r = 0; r < rows; ++r) { float s = 0; for (long c = 0; c < cols; ++c) s += to_half(x[r * cols + c]); o[r] = s; }
}
void rowsum_bf16_inputs(const float* x, float* o, long rows, long cols) {
    for (long r = 0; r < rows; ++r) { float s = 0; for (long c = 0; c < cols; ++c) s += to_bf16(x[r * cols + c]); o[r] = s; }
}
void gemm_naive(const float* a, const float* b, float* c, long m, long n, long k) {  // i-k-j, serial in k
    for (long i = 0; i < m * n; ++i) c[i] = 0;
    for (long i = 0; i < m; ++i) for (long p = 0; p < k; ++p) { float av = a[i * k + p];
        for (long j = 0; j < n; ++j) c[i * n + j] += av * b[p * n + j]; }
}
void gemm_blocked_omp(const float* a, const float* b, float* c, long m, long n, long k) {  // k in blocks of 64
    #pragma omp parallel for
    for (long i = 0; i < m; ++i) {
        for (long j = 0; j < n; ++j) c[i * n + j] = 0;
        for (long p0 = 0; p0 < k; p0 += 64) {
            float acc[4096] = {0};  // n <= 4096 here
            long p1 = p0 + 64 < k ? p0 + 64 : k;
            for (long p = p0; p < p1; ++p) { float av = a[i * k + p];
                #pragma omp simd
                for (long j = 0; j < n; ++j) acc[j] += av * b[p * n + j]; }
            for (long j = 0; j < n; ++j) c[i * n + j] += acc[j];
        }
    }
}
void gemm_fp16_inputs(const float* a, const float* b, float* c, long m, long n, long k) {  // fp32 accumulate
    for (long i = 0; i < m * n; ++i) c[i] = 0;
    for (long i = 0; i < m; ++i) for (long p = 0; p < k; ++p) { float av = to_half(a[i * k + p]);
        for (long j = 0; j < n; ++j) c[i * n + j] += av * to_half(b[p * n + j]); }
}
void gemm_bf16_inputs(const float* a, const float* b, float* c, long m, long n, long k) {
    for (long i = 0; i < m * n; ++i) c[i] = 0;
    for (long i = 0; i < m; ++i) for (long p = 0; p < k; ++p) { float av = to_bf16(a[i * k + p]);
        for (long j = 0; j < n; ++j) c[i * n + j] += av * to_bf16(b[p * n + j]); }
}
static void softmax_with(const float* x, float* o, long rows, long cols, float (*ex)(float), bool half) {
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols; float* orow = o + r * cols;
        float m = xr[0]; for (long c = 1; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        float s = 0;
        for (long c = 0; c < cols; ++c) { float e = ex(xr[c] - m); if (half) e = to_half(e); orow[c] = e; s += e; }
        for (long c = 0; c < cols; ++c) orow[c] = half ? to_half(orow[c] / s) : orow[c] / s;
    }
}
static float libm_exp(float v) { return std::exp(v); }
void softmax_libm(const float* x, float* o, long rows, long cols) { softmax_with(x, o, rows, cols, libm_exp, false); }
void softmax_poly5(const float* x, float* o, long rows, long cols) { softmax_with(x, o, rows, cols, exp_poly5, false); }
void softmax_poly3(const float* x, float* o, long rows, long cols) { softmax_with(x, o, rows, cols, exp_poly3, false); }
void softmax_fp16(const float* x, float* o, long rows, long cols) { softmax_with(x, o, rows, cols, libm_exp, true); }
void mse_serial(const float* x, const float* y, float* o, long n) {
    float s = 0; for (long i = 0; i < n; ++i) { float d = x[i] - y[i]; s += d * d; } o[0] = s / n;
}
void mse_omp(const float* x, const float* y, float* o, long n) {
    float s = 0;
    #pragma omp parallel for simd reduction(+:s)
    for (long i = 0; i < n; ++i) { float d = x[i] - y[i]; s += d * d; }
    o[0] = s / n;
}
void mse_fp16_inputs(const float* x, const float* y, float* o, long n) {
    float s = 0; for (long i = 0; i < n; ++i) { float d = to_half(x[i]) - to_half(y[i]); s += d * d; } o[0] = s / n;
}
void layernorm_onepass(const float* x, float* o, long rows, long cols) {  // E[x^2] - E[x]^2 (honest, less stable)
    for (long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols; float s = 0, q = 0;
        for (long c = 0; c < cols; ++c) { s += xr[c]; q += xr[c] * xr[c]; }
        float mean = s / cols, var = q / cols - mean * mean, inv = 1.0f / std::sqrt(var + 1e-5f);
        for (long c = 0; c < cols; ++c) o[r * cols + c] = (xr[c] - mean) * inv;
    }
}
}
"""

UNARY = "const float*, float*, int64, int64"
BINARY = "const float*, const float*, float*, int64"
GEMM = "const float*, const float*, float*, int64, int64, int64"
DISTRIBUTIONS = {"normal": 1.0, "large": 1e3, "small": 1e-3, "negative": None}


def _draw(shape: tuple[int, ...], distribution: str, gen: torch.Generator) -> torch.Tensor:
    base = torch.randn(shape, generator=gen)
    scale = DISTRIBUTIONS[distribution]
    return -base.abs() - 1e-3 if scale is None else base * scale


def _rows(fn):
    """A row-wise C kernel (rows, cols) as a torch function: row sums give one value per row."""
    def run(x):
        out = torch.empty(x.shape[:-1]) if "rowsum" in fn.name else torch.empty_like(x)
        fn(x, out, x.shape[0], x.shape[1])
        return out
    return run


def _gemm(fn):
    def run(a, b):
        out = torch.empty(a.shape[0], b.shape[1])
        fn(a, b, out, a.shape[0], b.shape[1], a.shape[1])
        return out
    return run


def _binary(fn, scalar: bool = False):
    """An n-element C kernel of two inputs: elementwise, or a scalar result (MSE)."""
    def run(x, y):
        out = torch.empty(()) if scalar else torch.empty_like(x)
        fn(x, y, out, x.numel())
        return out
    return run


def _reduction_cases(lib) -> list[tuple]:
    cases = []
    for cols in (1000, 65536, 1 << 20):
        shape = ((4 if cols > 1000 else 64, cols),)
        ref = lambda x: x.sum(dim=1)  # noqa: E731
        cases += [(f"rowsum n={cols} serial", "honest", shape, ref, _rows(lib.rowsum_serial)),
                  (f"rowsum n={cols} omp simd", "honest", shape, ref, _rows(lib.rowsum_omp)),
                  (f"rowsum n={cols} fp16 inputs", "half", shape, ref, _rows(lib.rowsum_fp16_inputs)),
                  (f"rowsum n={cols} bf16 inputs", "half", shape, ref, _rows(lib.rowsum_bf16_inputs))]
    for k in (67, 1024, 16384):
        shapes = ((16, k), (k, 32))
        cases += [(f"gemm k={k} naive", "honest", shapes, torch.matmul, _gemm(lib.gemm_naive)),
                  (f"gemm k={k} blocked omp", "honest", shapes, torch.matmul, _gemm(lib.gemm_blocked_omp)),
                  (f"gemm k={k} fp16 inputs", "half", shapes, torch.matmul, _gemm(lib.gemm_fp16_inputs)),
                  (f"gemm k={k} bf16 inputs", "half", shapes, torch.matmul, _gemm(lib.gemm_bf16_inputs))]
    ref = lambda x, y: torch.mean((x - y) ** 2)  # noqa: E731
    for n in (1 << 16, 1 << 22):
        shapes = ((n,), (n,))
        cases += [(f"mse n={n} serial", "honest", shapes, ref, _binary(lib.mse_serial, scalar=True)),
                  (f"mse n={n} omp simd", "honest", shapes, ref, _binary(lib.mse_omp, scalar=True)),
                  (f"mse n={n} fp16 inputs", "half", shapes, ref, _binary(lib.mse_fp16_inputs, scalar=True))]
    return cases


def _cases(lib) -> list[tuple[str, str, tuple, Callable, Callable]]:
    """(name, honest|half, input shapes, torch reference, candidate)."""
    softmax = lambda x: torch.softmax(x, dim=-1)  # noqa: E731
    layernorm = lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:])  # noqa: E731
    shape = ((32, 4096),)
    return [("2x+y", "honest", ((4096,), (4096,)), lambda x, y: 2 * x + y, _binary(lib.scale_add)),
            ("2x+y _Float16 math", "half", ((4096,), (4096,)), lambda x, y: 2 * x + y, _binary(lib.scale_add_fp16)),
            *_reduction_cases(lib),
            ("softmax libm exp", "honest", shape, softmax, _rows(lib.softmax_libm)),
            ("softmax poly5 exp", "honest", shape, softmax, _rows(lib.softmax_poly5)),
            ("softmax poly3 exp", "honest", shape, softmax, _rows(lib.softmax_poly3)),
            ("softmax fp16 exp/out", "half", shape, softmax, _rows(lib.softmax_fp16)),
            ("layernorm one-pass", "honest", shape, layernorm, _rows(lib.layernorm_onepass))]


def measure(seed: int = 0) -> list[dict]:
    with tempfile.TemporaryDirectory() as cache:
        functions = {name: UNARY for name in ("rowsum_serial", "rowsum_omp", "rowsum_fp16_inputs",
                                              "rowsum_bf16_inputs", "softmax_libm", "softmax_poly5",
                                              "softmax_poly3", "softmax_fp16", "layernorm_onepass")}
        functions |= {name: BINARY for name in ("scale_add", "scale_add_fp16", "mse_serial", "mse_omp", "mse_fp16_inputs")}
        functions |= {name: GEMM for name in ("gemm_naive", "gemm_blocked_omp", "gemm_fp16_inputs", "gemm_bf16_inputs")}
        lib = load_c(SOURCE, functions, cache)
        rows = []
        for name, kind, shapes, reference, candidate in _cases(lib):
            for distribution in DISTRIBUTIONS:
                gen = torch.Generator().manual_seed(seed)
                inputs = [_draw(s, distribution, gen) for s in shapes]
                with torch.no_grad():
                    r = reference(*inputs).numpy()
                    r64 = reference(*[x.double() for x in inputs]).numpy()
                c = candidate(*inputs).numpy()
                work = sum(x.numel() for x in inputs) / max(1, r.size)
                ratio, rel_c, rel_ref = ratio_to_reference(c, r, (r64 - r).astype(np.float32), np.float32, work)
                rows.append({"case": name, "kind": kind, "distribution": distribution, "work": work, "rel_c": rel_c,
                             "rel_ref": rel_ref, "ratio": ratio})
    return rows


FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kernels"
_PASSED = re.compile(r"float64 check: worst error ratio ([0-9.]+)x")
_FAILED = re.compile(r"error against a float64 reference is ([0-9.]+)x")


def measure_fixtures(seed: int = 20261121) -> list[dict]:
    """The ratio each honest / A10 fixture's verdict reports (the corpus's seed and test settings)."""
    sys.path.insert(0, str(FIXTURES.parents[1] / "verifier"))
    from verifier_corpus import parse
    from verifier_taskutil import fixture_task

    from verifier.api import verify
    from verifier.settings import VerifySettings

    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for path in sorted(FIXTURES.glob("honest_*.py")) + sorted(FIXTURES.glob("hack_a10_*.py")):
            entry = parse(path)
            disabled = tuple(set(entry.disable) | {"c_precision_downgrade"})
            settings = VerifySettings.for_tests(Path(cache), seed=seed, disabled_checks=disabled)
            verdict = verify(fixture_task(entry.task), path.read_text(), "cpu", settings)
            text = "\n".join(f"{g.reason}\n{g.detail}" for g in verdict.gates)
            match = _PASSED.search(text) or _FAILED.search(text)
            failed = next((g for g in verdict.gates if not g.passed), None)
            rows.append({"fixture": path.stem, "task": entry.task, "verdict": verdict.failed_gate or "pass",
                         "ratio": float(match.group(1)) if match else None,
                         "reason": failed.reason if failed is not None else ""})
    return rows


def _print_fixtures(rows: list[dict]) -> None:
    print(f"{'fixture':44} {'task':16} {'verdict':12} {'ratio':>9}")
    for row in rows:
        ratio = "n/a" if row["ratio"] is None else f"{row['ratio']:.1f}"
        why = f"  ({row['reason'][:70]})" if row["ratio"] is None and row["reason"] else ""
        print(f"{row['fixture']:44} {row['task']:16} {row['verdict']:12} {ratio:>9}{why}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    parser.add_argument("--fixtures", action="store_true", help="the fixture corpus through the real verifier")
    args = parser.parse_args()
    torch.set_num_threads(2)
    if args.fixtures:
        rows = measure_fixtures()
        if args.json:
            print(json.dumps(rows, indent=1))
        else:
            _print_fixtures(rows)
        return
    rows = measure()
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'case':32} {'kind':6} {'distribution':12} {'work':>8} {'rel c':>9} {'rel ref':>9} {'ratio':>9}")
    for row in rows:
        print(f"{row['case']:32} {row['kind']:6} {row['distribution']:12} {row['work']:8.0f} {row['rel_c']:9.2e} "
              f"{row['rel_ref']:9.2e} {row['ratio']:9.1f}")
    for kind in ("honest", "half"):
        ratios = [r["ratio"] for r in rows if r["kind"] == kind and np.isfinite(r["ratio"])]
        print(f"{kind}: ratio min {min(ratios):.1f}, max {max(ratios):.1f}")


if __name__ == "__main__":
    main()
