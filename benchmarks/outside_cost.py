"""What observing the runner from outside costs (verifier.monitor.cpu_sampler, outside; issue 36).

1. **The watched process's slowdown**: a child calls a fixed native workload (about ``--work-ms`` of
   arithmetic in a library of its own) in a loop and times every call itself, in wall time and in its
   thread's CPU time; the monitor's sampler is attached and detached in alternating windows, at each
   sampling period. The slowdown is the median call inside the sampled windows over the median call outside
   them (windows alternate, so load drift cancels; on a loaded machine the wall time also holds the
   preemptions each sampling interrupt gives the scheduler a chance to make, the CPU time does not).
2. **The monitor's cost**: per watched call (reading the threads' CPU time, draining the rings, attributing
   the samples: ``CallSamples.cost_ns``), opening the sampler on a runner (stopping it, one event per thread
   and CPU), and reading libtorch_cpu.so's symbol table (once per process).
3. **Per verification**: the wall time of a verification of an honest ReLU with the outside observation and
   without it (the session's sampler not opened), interleaved.

Run: .venv/bin/python -m benchmarks.outside_cost [--periods 20,50,100] [--windows 12] [--verifications 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIN_C = r"""
extern "C" double work(long n) {
    double s = 0;
    for (long i = 0; i < n; ++i) s += (double)i * 1e-9 + s * 1e-12;
    return s;
}
"""
CHILD = """
import ctypes, json, sys, threading, time
lib = ctypes.CDLL(sys.argv[1])
lib.work.restype = ctypes.c_double
n, calls, stop = int(sys.argv[2]), [], threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
print("ready", flush=True)
while not stop.is_set():
    began, cpu = time.monotonic_ns(), time.thread_time_ns()
    lib.work(n)
    calls.append((began, time.monotonic_ns() - began, time.thread_time_ns() - cpu))
print(json.dumps(calls), flush=True)
"""


def _library(tmp: Path) -> Path:
    (tmp / "work.cpp").write_text(SPIN_C)
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "work.cpp", "-o", "work.so"], cwd=tmp, check=True)
    return tmp / "work.so"


def _iterations(lib: Path, work_ms: float) -> int:
    import ctypes

    fn = ctypes.CDLL(str(lib)).work
    fn.restype = ctypes.c_double
    began = time.perf_counter()
    fn(10_000_000)
    return max(1000, int(10_000_000 * work_ms / 1e3 / (time.perf_counter() - began)))


def slowdown(period_us: int, windows: int, window_s: float, lib: Path, n: int) -> dict:
    """Median call with the sampler attached over the median call without it, windows alternating."""
    from verifier.monitor.cpu_sampler import CpuSampler

    child = subprocess.Popen([sys.executable, "-c", CHILD, str(lib), str(n)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    spans, costs = [], []
    for w in range(2 * windows):
        on = w % 2 == 0
        sampler = CpuSampler(child.pid, str(lib.parent / "none"), period_ns=period_us * 1000) if on else None
        start = time.monotonic_ns()
        if sampler is not None:
            with sampler.watching() as window:
                time.sleep(window_s)
            costs.append(window.samples.cost_ns / max(1, window.samples.samples))
            sampler.close()
        else:
            time.sleep(window_s)
        spans.append((start + 20_000_000, time.monotonic_ns() - 5_000_000, on))  # margins: no call straddles
    child.stdin.write("stop\n")
    child.stdin.flush()
    calls = json.loads(child.stdout.readline())
    child.wait()
    wall, cpu = {True: [], False: []}, {True: [], False: []}
    for began, ns, cpu_ns in calls:
        for a, b, on in spans:
            if a <= began and began + ns <= b:
                wall[on].append(ns)
                cpu[on].append(cpu_ns)
    wall_on, wall_off = statistics.median(wall[True]), statistics.median(wall[False])
    cpu_on, cpu_off = statistics.median(cpu[True]), statistics.median(cpu[False])
    return {"period_us": period_us, "calls_on": len(wall[True]), "calls_off": len(wall[False]),
            "median_ms_off": wall_off / 1e6, "wall_slowdown_pct": 100 * (wall_on / wall_off - 1),
            "cpu_slowdown_pct": 100 * (cpu_on / cpu_off - 1), "monitor_us_per_sample": statistics.median(costs) / 1e3}


def open_and_table_costs(lib: Path) -> dict:
    """Opening a sampler on a live process (median of 5) and reading libtorch_cpu.so's symbol table once."""
    import torch

    from verifier.monitor.cpu_sampler import CpuSampler
    from verifier.monitor.elf_functions import FunctionTable

    child = subprocess.Popen([sys.executable, "-c", CHILD, str(lib), "100000"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    opens = []
    for _ in range(5):
        began = time.perf_counter()
        sampler = CpuSampler(child.pid, "/none")
        opens.append(time.perf_counter() - began)
        sampler.close()
    child.kill()
    child.wait()
    began = time.perf_counter()
    FunctionTable(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so")
    return {"open_ms": 1e3 * statistics.median(opens), "symbol_table_ms": 1e3 * (time.perf_counter() - began)}


def per_verification(count: int) -> dict:
    """Wall seconds of an honest ReLU's verification with and without the outside observation, interleaved,
    and the monitor's own cost per observed call."""
    sys.path.insert(0, str(ROOT / "tests" / "verifier"))
    from verifier_taskutil import FIXTURES, fixture_task

    from verifier.api import verify
    from verifier.monitor import outside, session
    from verifier.settings import VerifySettings

    source = (FIXTURES / "honest_relu_omp.py").read_text()
    seen: list = []
    real_after, real_open = outside.OutsideWatch.after_call, session.Session._outside

    def after_call(self, samples, during):
        seen.append(samples)
        return real_after(self, samples, during)

    outside.OutsideWatch.after_call = after_call
    walls = {True: [], False: []}
    with tempfile.TemporaryDirectory() as cache:
        settings = VerifySettings.for_tests(Path(cache), seed=7)
        verify(fixture_task("relu_large"), source, "cpu", settings)  # warm: build cached, spares booted, table read
        for k in range(2 * count):
            on = k % 2 == 0
            session.Session._outside = real_open if on else (lambda self, pid: None)
            began = time.perf_counter()
            verdict = verify(fixture_task("relu_large"), source, "cpu", settings)
            walls[on].append(time.perf_counter() - began)
            assert verdict.passed, verdict.feedback
    session.Session._outside = real_open
    per_call = [s.cost_ns / 1e6 for s in seen]
    calls_per_verification = len(seen) / (count + 1)
    return {"verify_s_on": statistics.median(walls[True]), "verify_s_off": statistics.median(walls[False]),
            "observed_calls_per_verification": calls_per_verification,
            "monitor_ms_per_call": statistics.median(per_call),
            "monitor_ms_per_verification": statistics.median(per_call) * calls_per_verification,
            "samples_per_call": statistics.median(s.samples for s in seen)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", default="20,50,100", help="sampling periods in microseconds")
    parser.add_argument("--windows", type=int, default=12, help="sampled (and as many unsampled) windows per period")
    parser.add_argument("--window-s", type=float, default=0.25)
    parser.add_argument("--work-ms", type=float, default=2.0, help="the child's call length")
    parser.add_argument("--verifications", type=int, default=4, help="each way (0: skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lib = _library(Path(tmp))
        n = _iterations(lib, args.work_ms)
        print(json.dumps(open_and_table_costs(lib)), flush=True)
        for period in (int(p) for p in args.periods.split(",")):
            print(json.dumps(slowdown(period, args.windows, args.window_s, lib, n)), flush=True)
    if args.verifications:
        print(json.dumps(per_verification(args.verifications)), flush=True)
    print(textwrap.dedent(f"""\
        load average: {open('/proc/loadavg').read().split()[:3]}"""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
