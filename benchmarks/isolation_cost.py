"""What the sandbox's isolation adds to one verification, part by part (medians of interleaved
repeats, so a loaded machine shifts both sides of each comparison alike):

- prepare: the parent builds a process's policy, its import links and (as root with a reachable
  runtime) hands its directory to the sandbox uid;
- spawn: launcher + ``python -m`` of a trivial module under the real policy (privileges,
  no_new_privs, Landlock in the fork) against the same with an empty policy;
- compile: the fast loader's g++ run with ``-save-temps`` (the preprocessed text the build checks
  read) against without;
- checks: the build checks on that output (candidate lines, capability checks, ELF symbols);
- cache: hashing the built entry, copying it into the cache and back out, checked.

Run: .venv/bin/python -m benchmarks.isolation_cost [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from verifier import cpu_native
from verifier.backends.base import BuiltUnit
from verifier.gates.hack_build import check_units
from verifier.sandbox import isolation
from verifier.sandbox.compile_cache import CacheEntry, CompileCache, hash_artifacts

ROOT = Path(__file__).resolve().parents[1]
SOURCE = re.search(r'r"""(.*?)"""', (ROOT / "tests/fixtures/kernels/honest_relu_omp.py").read_text(), re.S).group(1)


def _ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _paired(a, b, repeats: int) -> tuple[float, float]:
    """Medians (ms) of a and b, run alternately."""
    ta, tb = [], []
    for _ in range(repeats):
        for fn, out in ((a, ta), (b, tb)):
            start = time.perf_counter()
            fn()
            out.append((time.perf_counter() - start) * 1000)
    return statistics.median(ta), statistics.median(tb)


def bench_spawn(base: Path, repeats: int) -> tuple[float, float, float]:
    """(prepare ms, spawn ms confined, spawn ms with an empty policy)."""
    workdir = base / "child"
    workdir.mkdir()
    prepare_ms = _ms(lambda: isolation.prepare(workdir, True), repeats)
    prepared = isolation.prepare(workdir, True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(prepared.import_root)}

    def spawn(policy: isolation.Policy):
        r, w = os.pipe()
        subprocess.run([sys.executable, "-m", "verifier.sandbox.launcher", "verifier.sandbox.landlock", str(r), str(w)],
                       pass_fds=(r, w), env={**env, isolation.POLICY_ENV: policy.to_env()}, cwd=workdir, check=True)
        os.close(r)
        os.close(w)

    confined, bare = _paired(lambda: spawn(prepared.policy), lambda: spawn(isolation.Policy()), repeats)
    return prepare_ms, confined, bare


def bench_build(base: Path, repeats: int) -> dict[str, float]:
    src = base / "kernel.cpp"
    src.write_text(SOURCE)

    def gxx(*extra: str):
        subprocess.run([cpu_native.COMPILER, *cpu_native.FLAGS, *extra, str(src), "-o", str(base / "k.so")],
                       cwd=base, check=True, capture_output=True)

    with_temps, without = _paired(lambda: gxx("-save-temps"), gxx, max(3, repeats // 3))
    result = cpu_native.build(SOURCE, base / "build")
    unit = BuiltUnit("load_c", result.preprocessed, result.includes, (result.library,))
    roots = (*isolation.SYSTEM_READ_EXEC, *isolation.runtime_read_exec())
    checks = _ms(lambda: check_units([unit], roots), repeats)
    key = cpu_native.source_key(SOURCE)
    entry = CacheEntry(key, cpu_native.entry_dir(key))

    def cache_round_trip():
        cache = CompileCache(Path(tempfile.mkdtemp(dir=base)))
        reported = hash_artifacts(base / "build", [str(Path(result.library).parent)])
        cache.ingest([entry], base / "build", reported)
        cache.seed([entry], Path(tempfile.mkdtemp(dir=base)))

    return {"compile_with_temps": with_temps, "compile_without": without, "checks": checks,
            "cache": _ms(cache_round_trip, repeats)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {isolation.describe(isolation.build_policy(Path(tempfile.gettempdir()), True)).mechanism}")
    with tempfile.TemporaryDirectory() as tmp:
        prepare_ms, confined, bare = bench_spawn(Path(tmp), args.repeats)
        build = bench_build(Path(tmp), args.repeats)
    spawn_extra = confined - bare
    compile_extra = build["compile_with_temps"] - build["compile_without"]
    print(f"prepare (parent, per process): {prepare_ms:.1f} ms")
    print(f"spawn launcher + python: {confined:.1f} ms confined vs {bare:.1f} ms bare (+{spawn_extra:.1f} ms)")
    print(f"g++ with -save-temps: {build['compile_with_temps']:.0f} ms vs {build['compile_without']:.0f} ms "
          f"(+{compile_extra:.0f} ms, cold builds only)")
    print(f"build checks: {build['checks']:.1f} ms; cache hash + ingest + seed: {build['cache']:.1f} ms")
    per_verification = 2 * (prepare_ms + spawn_extra) + build["checks"] + build["cache"]
    print(f"per verification (child + reference worker, warm cache): ~{per_verification:.0f} ms; "
          f"cold cache adds ~{compile_extra:.0f} ms per load_c source")


if __name__ == "__main__":
    main()
