"""The triton-ascend backend on an Ascend host (torch_npu + CANN + an NPU): the device path.

Written for hosts this project has never run on: nothing here is exercised without an NPU (the
tests cover only the probe's answer "no NPU"). What it does there:

- ``npu_ready`` asks torch_npu, in a subprocess (importing torch_npu where CANN's libraries are
  missing breaks ``import torch`` for the whole process), whether an NPU is visible; cached.
- ``activate_triton_ascend`` runs in the sandbox child before the candidate is imported: it puts
  the toolchain's site-packages *first* on ``sys.path`` so the candidate's ``import triton`` gets
  triton-ascend (the main environment's upstream Triton cannot launch on an NPU), puts
  bishengir-compile and CANN's tools on PATH for the JIT compile at the first launch, and imports
  torch_npu so tensors can live on ``npu``. It refuses if upstream Triton was already imported
  (two packages named ``triton`` cannot share a process).
- Timing is the monitor's own clock around each staged call (verifier.sandbox.serve); :func:`flush_l2`
  clears the L2 in each call's untimed preparation, as :mod:`verifier.backends.ascendc.npu_timing`
  describes (its event timer and per-kernel attribution are for tools run on the trusted side).
"""

from __future__ import annotations

import functools
import os
import sys

from verifier.backends.ascendc.toolchain import probe_npu


@functools.lru_cache(maxsize=1)
def npu_ready() -> tuple[bool, str]:
    """(True, "N NPU device(s)") where torch_npu sees an NPU; (False, why not) otherwise."""
    return probe_npu()


def activate_triton_ascend(site_packages: str, tool_dirs: tuple[str, ...]) -> None:
    loaded = sys.modules.get("triton")
    if loaded is not None and not str(getattr(loaded, "__file__", "")).startswith(site_packages):
        raise RuntimeError("upstream triton was imported before triton-ascend could be activated")
    if site_packages not in sys.path:
        sys.path.insert(0, site_packages)
    os.environ["PATH"] = os.pathsep.join([*tool_dirs, os.environ.get("PATH", "")])
    os.environ["TRITON_INTERPRET"] = "0"
    import torch_npu  # noqa: F401  (registers the npu device with torch)


def npu_synchronize() -> None:
    import torch

    torch.npu.synchronize()


_FLUSH: list = []


def flush_l2() -> None:
    """Zero a buffer twice the L2's size on the NPU (allocated once per process)."""
    from verifier.backends.ascendc.npu_timing import FLUSH_BYTES, npu_api

    if not _FLUSH:
        _FLUSH.append(npu_api().flush_buffer(FLUSH_BYTES))
    _FLUSH[0].zero_()
