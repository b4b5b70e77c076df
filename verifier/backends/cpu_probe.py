"""The CPU backend's peak probe: cpu_probe.cpp built by the fast loader's compiler and flags (the
code candidates get), run with the verifier's thread budget. Called in a subprocess by
verifier.machine_peaks.

Bandwidth: a STREAM-style triad over working sets from L1-sized to 8x the last-level cache (at
least 256 MB), best of several repetitions each. Compute: fp32 FMA throughput of the widest vector
unit the compiler targets with -march=native.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from pathlib import Path

from verifier import cpu_native
from verifier.machine_peaks import cpu_model
from verifier.roofline import MachinePeaks

_SOURCE = Path(__file__).with_name("cpu_probe.cpp")
# Many short repetitions, best kept: on a shared machine a short one is likelier to run undisturbed.
WINDOW_BYTES = 50e6  # bytes per timed unit (~2 ms at 25 GB/s)
REPS = 31
FMA_ITERS = 1_000_000  # per thread and repetition (~2 ms: 12 chains on two FMA pipes at 3 GHz)


def working_sets() -> tuple[int, ...]:
    """Triad working sets (three arrays together): 48 kB, then x8 until 8x the last-level cache, and twice
    the last-level cache: the roof of a timed window (verifier.roofline) is the probe's at the largest set
    not above the window's, and without that point a window of 40-250 MB, already from memory, met the
    24 MB set's cache bandwidth."""
    llc = _last_level_cache()
    largest = max(256 << 20, 8 * llc)
    sizes, size = [], 48 << 10
    while size * 2 <= largest:
        sizes.append(size)
        size *= 8
    return tuple(sorted({*sizes, 2 * llc, largest}))


def probe(threads: int, cache_dir: Path | None = None) -> MachinePeaks:
    lib = _library(cache_dir)
    curve = []
    for size in working_sets():
        n = max(16 * threads, size // 12)
        gbs = lib.triad_gbs(n, int(WINDOW_BYTES // 12), REPS, threads)
        if gbs <= 0:
            raise RuntimeError(f"triad probe could not allocate {size} bytes")
        curve.append((12 * n, round(gbs, 2)))
    gflops = lib.fma_gflops(FMA_ITERS, REPS, threads)
    device = f"{cpu_model()}, {threads} threads, {lib.vector_lanes() * 32}-bit vectors"
    return MachinePeaks(backend="cpu", device=device, threads=threads, bandwidth=tuple(curve),
                        compute_gflops=round(gflops, 2))


def _library(cache_dir: Path | None):
    directory = cache_dir or Path(tempfile.gettempdir()) / f"evokernel-probe-{os.getuid()}"
    result = cpu_native.build(_SOURCE.read_text(), directory)
    if not result.ok:
        raise RuntimeError(f"probe build failed: {result.diagnostics}")
    lib = ctypes.CDLL(result.library)
    lib.triad_gbs.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_int, ctypes.c_int]
    lib.triad_gbs.restype = ctypes.c_double
    lib.fma_gflops.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_int]
    lib.fma_gflops.restype = ctypes.c_double
    lib.vector_lanes.restype = ctypes.c_int
    return lib


def _last_level_cache() -> int:
    sizes = []
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KMG")) * scale)
    return max(sizes, default=32 << 20)
