"""The default peak probe of a device backend (cuda, triton, ascendc, ...): torch on the backend's
device. Called in a subprocess by verifier.machine_peaks through ``Backend.probe_peaks``.

Bandwidth: a triad, ``torch.add(b, c, alpha=0.5, out=a)``, over working sets from 256 MB to 1 GB
(beyond any device cache: the GPU timer flushes L2 before each timed call, so the roof a kernel
meets is the device memory's). Compute: an fp32 matmul (TF32 off), 2 n^3 FLOPs. Best of several
repetitions, timed on the host around a device synchronize.
"""

from __future__ import annotations

import time
from typing import Callable

from verifier.roofline import MachinePeaks

WORKING_SETS = (256 << 20, 1 << 30)
DEVICE_MODULES = {"npu": "torch_npu"}  # device types torch only knows once their extension is imported
MATMUL_N = 4096
REPS = 5


def probe(backend: str, device: str, synchronize: Callable[[], None], threads: int,
          working_sets: tuple[int, ...] = WORKING_SETS, matmul_n: int = MATMUL_N) -> MachinePeaks:
    import importlib

    import torch

    extension = DEVICE_MODULES.get(device.split(":")[0])
    if extension:
        importlib.import_module(extension)
    torch.backends.cuda.matmul.allow_tf32 = False
    curve = []
    for size in working_sets:
        n = size // 12
        a, b, c = (torch.ones(n, device=device) for _ in range(3))
        seconds = _best(lambda: torch.add(b, c, alpha=0.5, out=a), synchronize, calls=10)
        curve.append((12 * n, round(12 * n / seconds / 1e9, 2)))
        del a, b, c
    x = torch.randn(matmul_n, matmul_n, device=device)
    y = torch.randn(matmul_n, matmul_n, device=device)
    seconds = _best(lambda: torch.mm(x, y), synchronize, calls=5)
    gflops = 2 * matmul_n ** 3 / seconds / 1e9
    name = _device_name(device)
    return MachinePeaks(backend=backend, device=f"{name} (fp32 matmul peak)", threads=threads,
                        bandwidth=tuple(curve), compute_gflops=round(gflops, 2))


def _best(call: Callable[[], object], synchronize: Callable[[], None], calls: int) -> float:
    """Best per-call seconds over REPS repetitions of ``calls`` back-to-back calls (after a warm-up)."""
    call()
    synchronize()
    best = float("inf")
    for _ in range(REPS):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        synchronize()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _device_name(device: str) -> str:
    import torch

    module = getattr(torch, device.split(":")[0], None)
    try:
        return str(module.get_device_name(0))
    except Exception:  # a device module without get_device_name
        return device
