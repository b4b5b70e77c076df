"""What the zero-trust verifier's isolation adds to one verification, part by part (medians of
interleaved repeats, so a loaded machine shifts both sides of each comparison alike):

- site: the monitor makes a process's private directory, its policy and its import links;
- spawn: the launcher (PID and network namespaces) and ``python -c pass`` under the real policy
  (privileges, no_new_privs, Landlock, CPU pinning) against the same process started bare;
- boot: a runner's own start-up to Ready (torch, the observer, seccomp) - what a pooled spare saves;
- build: a load_c source through the monitor's build service, cold (the confined builder, g++ with
  ``-save-temps``, the checks on what it built, the cache) and cached (the checks and the placement);
  against a bare g++ run of the same source.

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
from verifier.backends.cpu import CpuBackend
from verifier.monitor.builds import BuildLimits, BuildService
from verifier.monitor.sites import RunnerSite, RunnerSpec, Site
from verifier.sandbox import isolation
from verifier.sandbox.observer import library
from verifier.sandbox.spawn import Sandboxed, clean_env

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


def bench_spawn(repeats: int) -> tuple[float, float, float]:
    """(site ms, spawn ms confined, spawn ms bare)."""
    def site_only():
        site = Site("runner")
        site.policy(threads=2)
        site.close()

    def confined():
        site = Site("runner")
        policy, import_root = site.policy(threads=2)
        process = Sandboxed([sys.executable, "-c", "pass"], policy, site.work, clean_env(2, site.work, import_root),
                            channel=False)
        process.wait(60)
        site.close()

    def bare():
        subprocess.run([sys.executable, "-c", "pass"], check=True)

    site_ms = _ms(site_only, repeats)
    spawned, plain = _paired(confined, bare, repeats)
    return site_ms, spawned, plain


def bench_boot(repeats: int, cache: Path) -> float:
    observer, _ = library(cache)
    spec = RunnerSpec("cpu", 2, 6144, 256, observer=str(observer or ""))

    def boot():
        site = RunnerSite(spec)
        site.wait_ready(time.monotonic() + 300)
        site.close()

    return _ms(boot, max(3, repeats // 3))


def bench_build(repeats: int, base: Path) -> dict[str, float]:
    src = base / "kernel.cpp"
    src.write_text(SOURCE)
    args = {"source": SOURCE, "functions": {"relu": "const float*, float*, int64"}}
    limits = BuildLimits(2, 6144, 256, "float32", ())

    def cold():
        cache = Path(tempfile.mkdtemp(dir=base))
        (cache / "libs").mkdir()
        outcome = BuildService(CpuBackend(), {}, cache, cache / "libs", limits).run("load_c", args, 120)
        assert outcome.ok, outcome.detail

    warm_cache = Path(tempfile.mkdtemp(dir=base))
    (warm_cache / "libs").mkdir()
    service = BuildService(CpuBackend(), {}, warm_cache, warm_cache / "libs", limits)
    service.run("load_c", args, 120)

    def gxx():
        subprocess.run([cpu_native.COMPILER, *cpu_native.FLAGS, str(src), "-o", str(base / "k.so")], cwd=base,
                       check=True, capture_output=True)

    cold_ms, bare_ms = _paired(cold, gxx, max(3, repeats // 3))
    return {"cold": cold_ms, "bare_gxx": bare_ms, "cached": _ms(lambda: service.run("load_c", args, 120), repeats)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    mechanism = isolation.describe(isolation.build_policy("runner", Path(tempfile.gettempdir()), writable=True)).mechanism
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {mechanism}")
    with tempfile.TemporaryDirectory() as tmp:
        site_ms, confined, bare = bench_spawn(args.repeats)
        boot_ms = bench_boot(args.repeats, Path(tmp))
        build = bench_build(args.repeats, Path(tmp))
    print(f"site (directories, policy, import links): {site_ms:.1f} ms")
    print(f"spawn python: {confined:.1f} ms through the launcher, confined, vs {bare:.1f} ms bare "
          f"(+{confined - bare:.1f} ms)")
    print(f"runner boot to Ready (torch, observer, seccomp): {boot_ms:.0f} ms (paid ahead of need by a pooled spare)")
    print(f"load_c build through the monitor: cold {build['cold']:.0f} ms vs a bare g++ {build['bare_gxx']:.0f} ms "
          f"(+{build['cold'] - build['bare_gxx']:.0f} ms: builder, -save-temps, checks, cache); "
          f"cached {build['cached']:.1f} ms")


if __name__ == "__main__":
    main()
