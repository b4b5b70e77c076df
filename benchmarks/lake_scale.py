"""Memory-lake scale benchmark: append throughput, files and bytes before/after compaction, and
retrieval latency p50/p95 at 10k, 100k and 1M synthetic items.

    .venv/bin/python -m benchmarks.lake_scale [--sizes 10000,100000,1000000] [--queries 100]

Items are synthetic but kernel-like: an op name, a Zipf-distributed mix of kernel vocabulary
and a long tail of identifiers in title, body and code; 1% of items carry Q updates. Each
retrieval is a full ``Lake.retrieve`` (BM25 pool of K = 15, epsilon-greedy N = 5, api_templates,
and the append that records it). Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from memory_lake import Lake, NewItem, RetrievalRequest, SeedItemRow, ValueUpdate

OPS = ("relu gelu silu sigmoid tanh softmax log_softmax layer_norm batch_norm group_norm rms_norm matmul gemm "
       "bmm conv1d conv2d conv3d conv_transpose2d max_pool2d avg_pool2d sum mean amax argmax cumsum attention "
       "dropout embedding gather scatter transpose concat hardswish elu selu mish softplus cross_entropy "
       "mse_loss kl_div cosine_similarity triplet_loss huber_loss swish instance_norm min_reduction").split()
WORDS = ("tile block thread warp vectorize simd avx2 avx512 openmp parallel unroll prefetch cache shared memory "
         "coalesced bank conflict reduction atomic fused epilogue register spill occupancy stride contiguous "
         "layout nchw nhwc float32 float16 bfloat16 accumulate precision tolerance overflow numerically stable "
         "exp log subtract kernel loop inner outer row column broadcast elementwise pointer restrict aligned "
         "buffer queue pipeline double buffering latency speedup compile error correctness mismatch shape "
         "dtype output input weight bias gradient chunk batch channel height width padding dilation grid "
         "launch bound branch divergent mask tail remainder scalar fallback intrinsic fma horner polynomial "
         "approximation lookup table welford variance online two pass single pass transpose swizzle").split()
CATEGORIES = ("activation", "matmul", "convolution", "normalization", "pooling", "reduction", "loss", "other")
KINDS = ("experience", "trace", "best_practice")


def vocabulary(rng: np.random.Generator, tail: int = 20_000) -> list[str]:
    syllables = ["ka", "ne", "ro", "ti", "mu", "sa", "lo", "vi", "de", "pa", "zu", "fe", "gi", "ho", "ba", "qu"]
    made = {"".join(rng.choice(syllables, size=rng.integers(2, 4))) + str(rng.integers(0, 50)) for _ in range(tail)}
    return WORDS + OPS + sorted(made)


def synthetic_items(count: int, vocab: list[str], rng: np.random.Generator) -> list[NewItem]:
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    weights /= weights.sum()
    words = np.asarray(vocab, dtype=object)
    body_words = words[rng.choice(len(vocab), size=(count, 40), p=weights)]
    code_words = words[rng.choice(len(vocab), size=(count, 16), p=weights)]
    ops = rng.integers(0, len(OPS), size=count)
    items = []
    for i in range(count):
        op = OPS[ops[i]]
        items.append(NewItem(kind=KINDS[i % 3], backend="cpu", task_id=f"L{1 + i % 2}_{op}_{i % 97}",
                             category=CATEGORIES[ops[i] % len(CATEGORIES)], title=f"{op} kernel note {i % 1000}",
                             body=" ".join(body_words[i]), code="y[i] = " + " + ".join(code_words[i]) + ";"))
    return items


def build(root: Path, size: int, batch: int, rng: np.random.Generator) -> tuple[Lake, float, list[str]]:
    vocab = vocabulary(rng)
    lake = Lake.create(root, "cpu", [SeedItemRow("cpu API notes", "OpenMP parallel for, restrict pointers, simd"),
                                     SeedItemRow("cpu example", "elementwise relu in C", "y[i] = x[i] > 0 ? x[i] : 0;")])
    ids: list[str] = []
    spent = 0.0
    for start in range(0, size, batch):
        items = synthetic_items(min(batch, size - start), vocab, rng)
        began = time.perf_counter()
        ids += lake.add_items(items)
        spent += time.perf_counter() - began
    return lake, size / spent, ids


def add_values(lake: Lake, ids: list[str], rng: np.random.Generator) -> None:
    chosen = rng.choice(len(ids), size=max(1, len(ids) // 100), replace=False)
    for part in np.array_split(chosen, 10):
        lake.update_values([ValueUpdate(ids[j], 1 + int(j % 2), float(rng.uniform(-1, 1)), 0.3, "bench")
                            for j in part])


def time_retrievals(lake: Lake, queries: int, rng: np.random.Generator) -> tuple[float, float]:
    latencies = []
    for q in range(queries):
        op = OPS[q % len(OPS)]
        text = (f"{op} kernel for a {op.replace('_', ' ')} operator, float32 input shape batch channel "
                f"height width; fuse the elementwise epilogue, vectorize the inner loop with simd")
        req = RetrievalRequest(attempt_id=f"bench-{q}", task_id=f"L1_{op}", task_text=text,
                               category=CATEGORIES[q % len(CATEGORIES)], backend="cpu", stage=1 + q % 2,
                               n=5, lam=3, epsilon=0.1, seed=q)
        began = time.perf_counter()
        lake.retrieve(req)
        latencies.append((time.perf_counter() - began) * 1e3)
    latencies.sort()
    return statistics.median(latencies), latencies[int(0.95 * (len(latencies) - 1))]


def footprint(lake: Lake) -> tuple[int, int]:
    files = lake.storage.visible_files()
    return sum(len(v) for v in files.values()), sum(f.size for v in files.values() for f in v)


def run_size(size: int, batch: int, queries: int, base: Path) -> dict:
    rng = np.random.default_rng(size)
    root = base / f"lake-{size}"
    began = time.perf_counter()
    lake, rows_per_s, ids = build(root, size, batch, rng)
    build_s = time.perf_counter() - began
    add_values(lake, ids, rng)
    files_before, bytes_before = footprint(lake)
    p50_raw, p95_raw = time_retrievals(lake, max(10, queries // 5), rng)
    began = time.perf_counter()
    lake.compact()
    compact_s = time.perf_counter() - began
    files_after, bytes_after = footprint(lake)
    time_retrievals(lake, 3, rng)  # warm the per-file statistics cache after compaction
    p50, p95 = time_retrievals(lake, queries, rng)
    lake.close()
    shutil.rmtree(root, ignore_errors=True)
    return dict(size=size, build_s=build_s, rows_per_s=rows_per_s, files_before=files_before,
                bytes_before=bytes_before, compact_s=compact_s, files_after=files_after, bytes_after=bytes_after,
                p50_uncompacted=p50_raw, p95_uncompacted=p95_raw, p50=p50, p95=p95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--batch", type=int, default=10_000, help="items per append batch")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--root", default=None, help="scratch directory (default: a temp dir)")
    args = parser.parse_args()
    base = Path(args.root or tempfile.mkdtemp(prefix="lake-scale-"))
    print("size | build s | append rows/s | files before->after | MB before->after | compact s | "
          "p50/p95 ms uncompacted | p50/p95 ms compacted", flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        r = run_size(size, args.batch, args.queries, base)
        print(f"{r['size']:>9,} | {r['build_s']:7.1f} | {r['rows_per_s']:13,.0f} | "
              f"{r['files_before']:>5} -> {r['files_after']:<3} | "
              f"{r['bytes_before'] / 1e6:8.1f} -> {r['bytes_after'] / 1e6:<8.1f} | {r['compact_s']:9.1f} | "
              f"{r['p50_uncompacted']:6.1f} / {r['p95_uncompacted']:<6.1f} | {r['p50']:6.1f} / {r['p95']:<6.1f}",
              flush=True)


if __name__ == "__main__":
    main()
