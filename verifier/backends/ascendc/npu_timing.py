"""NPU latency for the ascendc and triton-ascend backends: device events, the L2 cleared before every
repetition, and per-kernel attribution.

The verifier's latency protocol is the same on every device (``verifier.sandbox.timer``: candidate and
reference interleaved in random order per round, warm-up first, fresh inputs every call, median and
bootstrap CI in the parent); a backend only supplies ``timer()``, a function that runs ``fn`` once and
returns milliseconds. On an NPU that is :class:`EventTimer`:

1. zero a buffer twice the size of the L2 cache (910B: 192 MB) on the device, so the previous call's
   inputs and outputs are not served from L2 (queued before the start event: not timed);
2. record a start event on the current stream, run ``fn``, record an end event, wait for it;
3. return the events' elapsed time (device time between the two points of the stream, host
   launch overhead inside it included, as for CUDA events).

Not triton-ascend's ``do_bench_npu``: that averages the first row of the profiler's
``op_statistic.csv`` (whichever op type sorts first, possibly not the candidate's) over calls with no
cache flush, and is a second protocol beside the verifier's.

Per-kernel attribution (:func:`attribute`): one untimed call under ``torch_npu.profiler`` (NPU
activity), parsed from ``op_statistic.csv`` (documented columns: ``OP Type``, ``Core Type``,
``Count``, ``Total Time(us)``): which device kernels the call ran and how long each took, so a
verdict can say where the time went and flag work that is not the candidate's own kernels (an
``aclnn`` op standing in for a kernel). :func:`attribution_note` is the one-line summary.

The device is reached only through :class:`DeviceApi`; :func:`npu_api` is torch_npu's. Everything
else (the flush order, event arithmetic, the CSV parsing, the summary) runs on any machine, and the
tests drive it with :class:`HostApi` (host clock, host flush buffer, ``torch.profiler`` on the CPU).
This module imports torch and torch_npu only inside functions.
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

L2_BYTES_910B = 192 * 1024 * 1024
FLUSH_BYTES = 2 * L2_BYTES_910B
OWN_KERNEL_PREFIXES = ("triton", "custom", "ascendc")  # op types of a candidate's own kernels


@dataclass(frozen=True)
class KernelTime:
    """One device kernel (op type) seen while profiling: calls and total device time."""

    name: str
    calls: int
    total_us: float
    core_type: str = ""


class DeviceApi(Protocol):
    """What timing and attribution need from a device (torch_npu on an NPU)."""

    def event(self) -> Any: ...  # record(), synchronize(), elapsed_time(end) -> ms

    def synchronize(self) -> None: ...

    def flush_buffer(self, nbytes: int) -> Any: ...  # has zero_()

    def profile(self, fn: Callable[[], Any], workdir: Path) -> list[KernelTime]: ...


class EventTimer:
    """``timer()`` for the verifier's paired protocol: one call of ``fn`` in device milliseconds,
    the L2 cleared before it (see the module docstring)."""

    def __init__(self, api: DeviceApi, flush_bytes: int = FLUSH_BYTES) -> None:
        self.api = api
        self.flush = api.flush_buffer(flush_bytes)

    def __call__(self, fn: Callable[[], Any]) -> float:
        self.flush.zero_()  # stream-ordered before the start event: evicts L2, not timed
        start, end = self.api.event(), self.api.event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))


def attribute(api: DeviceApi, fn: Callable[[], Any]) -> list[KernelTime]:
    """The device kernels one (untimed, warmed-up) call of ``fn`` runs, longest first."""
    workdir = Path(tempfile.mkdtemp(prefix="evokernel-npu-profile-"))
    try:
        fn()  # warm-up: JIT compiles and first-touch allocations stay out of the profile
        api.synchronize()
        kernels = api.profile(fn, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return sorted(kernels, key=lambda k: -k.total_us)


def parse_op_statistic(text: str) -> list[KernelTime]:
    """Rows of an ``op_statistic*.csv`` (CANN profiler) as KernelTimes; unknown columns ignored."""
    rows = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    kernels = []
    for row in rows:
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        name = row.get("OP Type") or row.get("Name")
        if not name:
            continue
        total = row.get("Total Time(us)") or row.get("Duration(us)") or "0"
        kernels.append(KernelTime(name, int(float(row.get("Count") or 1)), float(total), row.get("Core Type", "")))
    return kernels


def find_op_statistic(root: Path) -> list[KernelTime]:
    """Every ``op_statistic*.csv`` the profiler wrote under ``root``, merged by op type."""
    merged: dict[tuple[str, str], KernelTime] = {}
    for path in sorted(root.rglob("op_statistic*.csv")):
        for k in parse_op_statistic(path.read_text(errors="replace")):
            old = merged.get((k.name, k.core_type))
            merged[(k.name, k.core_type)] = k if old is None else KernelTime(
                k.name, old.calls + k.calls, old.total_us + k.total_us, k.core_type)
    return list(merged.values())


def attribution_note(kernels: list[KernelTime], own: tuple[str, ...] = OWN_KERNEL_PREFIXES, limit: int = 6) -> str:
    """One line: each kernel's share of the call's device time; others than the candidate's own
    kernels (``own`` prefixes, case-insensitive) are marked."""
    total = sum(k.total_us for k in kernels)
    if not kernels or total <= 0:
        return "per-kernel attribution: the profiler saw no device kernel"
    parts = []
    for k in kernels[:limit]:
        mark = "" if k.name.lower().startswith(own) else ", not the candidate's kernel"
        parts.append(f"{k.name} {k.calls} call{'s' if k.calls != 1 else ''} {k.total_us:.1f} us "
                     f"({100 * k.total_us / total:.0f}%{mark})")
    more = f", and {len(kernels) - limit} more" if len(kernels) > limit else ""
    return "per-kernel attribution: " + "; ".join(parts) + more


class NpuApi:
    """:class:`DeviceApi` over torch_npu (an Ascend host with CANN; never exercised by this project)."""

    def __init__(self) -> None:
        import torch
        import torch_npu

        self.torch, self.torch_npu = torch, torch_npu

    def event(self):
        return self.torch_npu.npu.Event(enable_timing=True)

    def synchronize(self) -> None:
        self.torch.npu.synchronize()

    def flush_buffer(self, nbytes: int):
        return self.torch.empty(nbytes // 4, dtype=self.torch.int32, device="npu")

    def profile(self, fn: Callable[[], Any], workdir: Path) -> list[KernelTime]:
        profiler = self.torch_npu.profiler
        config = profiler._ExperimentalConfig(profiler_level=profiler.ProfilerLevel.Level1, l2_cache=False,
                                              data_simplification=False)
        with profiler.profile(activities=[profiler.ProfilerActivity.NPU],
                              on_trace_ready=profiler.tensorboard_trace_handler(str(workdir)),
                              experimental_config=config):
            fn()
            self.synchronize()
        return find_op_statistic(workdir)


def npu_api() -> NpuApi:
    return NpuApi()


class HostApi:
    """:class:`DeviceApi` on the host CPU (tests, and a reference for the protocol): events read a
    monotonic clock when recorded (the CPU runs ``fn`` synchronously), the flush buffer is a host
    tensor (the same idea against the last-level cache), profiling is ``torch.profiler`` on the CPU."""

    class _Event:
        def __init__(self) -> None:
            self.t = None

        def record(self) -> None:
            self.t = time.perf_counter()

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, end: "HostApi._Event") -> float:
            return (end.t - self.t) * 1e3

    def event(self):
        return self._Event()

    def synchronize(self) -> None:
        pass

    def flush_buffer(self, nbytes: int):
        import torch

        return torch.empty(nbytes // 4, dtype=torch.int32)

    def profile(self, fn: Callable[[], Any], workdir: Path) -> list[KernelTime]:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        return [KernelTime(e.key, int(e.count), float(e.self_cpu_time_total), "CPU")
                for e in prof.key_averages() if e.key.startswith("aten::") and e.self_cpu_time_total > 0]
