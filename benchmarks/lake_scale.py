"""Memory-lake scale benchmark on DuckLake: append throughput, compaction, retrieval latency p50/p95
at 100k and 1M synthetic items for each catalog kind, 4 concurrent writer processes (Q-update
throughput and lost updates), and our BM25 postings against DuckDB's FTS extension.

    .venv/bin/python -m benchmarks.lake_scale [--sizes 100000,1000000] [--queries 100]
        [--catalogs directory,postgres] [--postgres "host=127.0.0.1 port=5432 user=postgres"]
        [--writers 4] [--fts]

``postgres`` needs a running server (``--postgres``: a libpq conninfo without dbname; each run gets a
fresh database made with psql). Items are synthetic but kernel-like: an op name, a Zipf mix of
kernel vocabulary and a long tail of identifiers; 1% of items carry Q updates. A retrieval is
``Lake.retrieve`` (BM25 pool K = 15, epsilon-greedy N = 5, api_templates), timed without and with
the append that records it; the first pass after compaction reads most posting lists and items
from Parquet, the same queries again find them in the lake's caches. Timings on a shared machine
are noisy: the load is printed.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from memory_lake import Lake, NewItem, RetrievalRequest, SeedItemRow, ValueUpdate
from memory_lake.engine import extension_path, new_connection

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
SEEDS = [SeedItemRow("cpu API notes", "OpenMP parallel for, restrict pointers, simd"),
         SeedItemRow("cpu example", "elementwise relu in C", "y[i] = x[i] > 0 ? x[i] : 0;")]


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
    return [NewItem(kind=KINDS[i % 3], backend="cpu", task_id=f"L{1 + i % 2}_{OPS[ops[i]]}_{i % 97}",
                    category=CATEGORIES[ops[i] % len(CATEGORIES)], title=f"{OPS[ops[i]]} kernel note {i % 1000}",
                    body=" ".join(body_words[i]), code="y[i] = " + " + ".join(code_words[i]) + ";")
            for i in range(count)]


def request(q: int, attempt: str) -> RetrievalRequest:
    op = OPS[q % len(OPS)]
    text = (f"{op} kernel for a {op.replace('_', ' ')} operator, float32 input shape batch channel "
            f"height width; fuse the elementwise epilogue, vectorize the inner loop with simd")
    return RetrievalRequest(attempt_id=attempt, task_id=f"L1_{op}", task_text=text,
                            category=CATEGORIES[q % len(CATEGORIES)], backend="cpu", stage=1 + q % 2,
                            n=5, lam=3, epsilon=0.1, seed=q)


def percentiles(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def time_retrievals(lake: Lake, queries: int, record: bool) -> tuple[float, float]:
    latencies = []
    for q in range(queries):
        began = time.perf_counter()
        lake.retrieve(request(q, f"bench-{uuid.uuid4().hex[:8]}"), record=record)
        latencies.append((time.perf_counter() - began) * 1e3)
    return percentiles(latencies)


def new_uri(catalog: str, base: Path, postgres: str | None, name: str) -> str:
    if catalog == "directory":
        return str(base / name)
    database = f"bench_{uuid.uuid4().hex[:10]}"
    subprocess.run(["psql", "-q", postgres + " dbname=postgres", "-c", f"CREATE DATABASE {database}"], check=True)
    os.environ["EVOKERNEL_LAKE_DATA_PATH"] = str(base / f"{name}-data")
    return f"ducklake:postgres:{postgres} dbname={database}"


def build(uri: str, size: int, batch: int, rng: np.random.Generator) -> tuple[Lake, float, list[str]]:
    vocab = vocabulary(rng)
    lake = Lake.create(uri, "cpu", SEEDS)
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


def run_size(catalog: str, size: int, args, base: Path) -> dict:
    rng = np.random.default_rng(size)
    uri = new_uri(catalog, base, args.postgres, f"lake-{catalog}-{size}")
    began = time.perf_counter()
    lake, rows_per_s, ids = build(uri, size, args.batch, rng)
    build_s = time.perf_counter() - began
    add_values(lake, ids, rng)
    began = time.perf_counter()
    result = lake.compact()
    compact_s = time.perf_counter() - began
    time_retrievals(lake, 3, record=False)  # warm the per-file caches after compaction
    p50, p95 = time_retrievals(lake, args.queries, record=False)
    p50_again, p95_again = time_retrievals(lake, args.queries, record=False)  # same queries: terms, items cached
    p50_rec, p95_rec = time_retrievals(lake, max(10, args.queries // 5), record=True)
    out = dict(catalog=catalog, size=size, build_s=build_s, rows_per_s=rows_per_s, compact_s=compact_s,
               files=(result.files_before, result.files_after), mb=(result.bytes_before / 1e6, result.bytes_after / 1e6),
               p50=p50, p95=p95, p50_again=p50_again, p95_again=p95_again, p50_rec=p50_rec, p95_rec=p95_rec,
               uri=uri)
    lake.close()
    return out


def _writer(uri: str, item_ids: list[str], count: int, tag: str) -> None:
    lake = Lake.open(uri)
    rng = np.random.default_rng(abs(hash(tag)) % 2**32)
    for i in range(count):
        item = item_ids[int(rng.integers(0, len(item_ids)))]
        lake.update_values([ValueUpdate(item, 1, float(rng.uniform(-1, 1)), 0.3, f"{tag}-{i}")])
        lake.append("attempts", [{"attempt_id": f"{tag}-{i}", "code": "x" * 200}])
    lake.close()


def concurrent_writers(catalog: str, args, base: Path) -> dict:
    """``args.writers`` processes, each ``args.updates`` Q updates (on 5 shared items) + attempt appends."""
    lake = Lake.create(new_uri(catalog, base, args.postgres, f"writers-{catalog}"), "cpu", SEEDS)
    ids = lake.add_items(synthetic_items(5, vocabulary(np.random.default_rng(0), 100), np.random.default_rng(1)))
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(lake.root, ids, args.updates, f"w{k}")) for k in range(args.writers)]
    began = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    seconds = time.perf_counter() - began
    rows = lake.query("SELECT item_id, seq, q_before, q_after FROM value_updates ORDER BY seq").to_pylist()
    expected = args.writers * args.updates
    last: dict[str, float] = {}
    broken = 0
    for row in rows:  # each update must start from the previous update of its item
        broken += abs(row["q_before"] - last.get(row["item_id"], lake.q_init)) > 1e-12
        last[row["item_id"]] = row["q_after"]
    gaps = [b["seq"] - a["seq"] for a, b in zip(rows, rows[1:])]
    lake.close()
    return dict(catalog=catalog, updates=len(rows), lost=expected - len(rows) + broken,
                gapless=all(g == 1 for g in gaps), per_s=len(rows) / seconds, seconds=seconds)


def fts_comparison(uri: str, queries: int) -> dict:
    """DuckDB's FTS (BM25) over the same items: index build (= the cost of every append, as the
    index cannot be updated) and query latency, against our postings retrieval on the same lake."""
    lake = Lake.open(uri)
    con = new_connection()
    con.execute(f"LOAD '{extension_path('fts')}'")
    con.execute(f"ATTACH '{lake.location.catalog}' AS src (READ_ONLY)")
    con.execute("CREATE TABLE docs AS SELECT item_id, embedding_text FROM src.items")
    began = time.perf_counter()
    con.execute("PRAGMA create_fts_index('docs', 'item_id', 'embedding_text', overwrite=1)")
    build_s = time.perf_counter() - began
    latencies = []
    for q in range(queries):
        text = request(q, "fts").task_text.replace("'", " ")
        began = time.perf_counter()
        con.execute("SELECT item_id, score FROM (SELECT item_id, fts_main_docs.match_bm25(item_id, ?) AS score "
                    "FROM docs) WHERE score IS NOT NULL ORDER BY score DESC LIMIT 15", [text]).fetchall()
        latencies.append((time.perf_counter() - began) * 1e3)
    ours = time_retrievals(lake, queries, record=False)
    con.close()
    lake.close()
    return dict(build_s=build_s, fts=percentiles(latencies), ours=ours)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--catalogs", default="directory")
    parser.add_argument("--postgres", default=None, help="libpq conninfo of a server, without dbname")
    parser.add_argument("--batch", type=int, default=10_000, help="items per append transaction")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--writers", type=int, default=4, help="concurrent writer processes (0: skip)")
    parser.add_argument("--updates", type=int, default=25, help="Q updates per writer process")
    parser.add_argument("--fts", action="store_true", help="compare with DuckDB's FTS at the largest size")
    parser.add_argument("--root", default=None, help="scratch directory (default: a temp dir)")
    args = parser.parse_args()
    base = Path(args.root or tempfile.mkdtemp(prefix="lake-scale-"))
    catalogs = [c for c in args.catalogs.split(",") if c]
    print(f"load average at start: {load()}", flush=True)
    print("catalog | items | append items/s | compact s | files | MB | retrieve p50/p95 ms | "
          "same queries again p50/p95 ms | retrieve+record p50/p95 ms", flush=True)
    last = {}
    for catalog in catalogs:
        for size in (int(s) for s in args.sizes.split(",")):
            r = run_size(catalog, size, args, base)
            last[catalog] = r["uri"]
            print(f"{catalog} | {size:,} | {r['rows_per_s']:,.0f} | {r['compact_s']:.1f} | "
                  f"{r['files'][0]} -> {r['files'][1]} | {r['mb'][0]:.0f} -> {r['mb'][1]:.0f} | "
                  f"{r['p50']:.1f} / {r['p95']:.1f} | {r['p50_again']:.1f} / {r['p95_again']:.1f} | "
                  f"{r['p50_rec']:.1f} / {r['p95_rec']:.1f}   (load {load()})",
                  flush=True)
    for catalog in catalogs if args.writers > 0 else []:
        w = concurrent_writers(catalog, args, base)
        print(f"{catalog}: {args.writers} writer processes: {w['updates']} Q updates in {w['seconds']:.1f} s "
              f"({w['per_s']:.1f}/s, each with an attempt append), lost updates {w['lost']}, "
              f"seq gapless {w['gapless']}   (load {load()})", flush=True)
    if args.fts and "directory" in last:
        f = fts_comparison(last["directory"], args.queries)
        print(f"FTS extension: index build {f['build_s']:.1f} s (needed after every append); query p50/p95 "
              f"{f['fts'][0]:.1f} / {f['fts'][1]:.1f} ms; our postings p50/p95 {f['ours'][0]:.1f} / "
              f"{f['ours'][1]:.1f} ms   (load {load()})", flush=True)
    if not args.root:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
