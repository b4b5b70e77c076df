"""Roofline position of a measured kernel: what it must move and compute, over its measured time,
against this machine's probed bandwidth and compute peak (verifier.machine_peaks).

- :class:`Workload` (counted on the reference, verifier.sandbox.workload): bytes moved, the lower
  bound of traffic (every input, output and parameter touched once), and FLOPs.
- :class:`MachinePeaks` (probed once per machine and backend): a STREAM-triad bandwidth curve over
  working sets from L1-sized to far beyond the last-level cache, and the FMA throughput.
- :func:`position` puts a time on that roofline. The bandwidth roof for a kernel is the probed
  bandwidth at the working set of the timed window it was measured in: every call of a window has
  inputs of its own and keeps its outputs (verifier.monitor.timing), so a window of K calls touches
  K times a call's inputs and outputs, and the parameters once. A small task timed in windows whose
  inputs outgrow the caches runs from memory (mse_loss: 4.2 MB a call, 68 calls, 272 MB a window),
  as the triad probe over a working set that size does. The time no kernel can beat is
  max(bytes / roof, flops / compute peak): what the feedback's share is of. A kernel faster than one
  call's own roof allows (the probe at one call's working set, a faster level than its window's:
  where a window's inputs lie is an estimate, and a probe on a loaded machine understates memory)
  by more than :data:`PLAUSIBLE_MARGIN` (for what the probes leave on the table) is implausible: it
  skipped work or the measurement is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

# A kernel may beat a probe somewhat (a read-only reduction moves more bytes per second than a
# triad, which STREAM counts without its write-allocate traffic): beyond this factor it is flagged.
PLAUSIBLE_MARGIN = 1.5
FROM_CACHE = 1.25  # a roof this much above the memory roof is a cache's (the triad at twice the last-level cache
# still finds some of its arrays there)


@dataclass(frozen=True)
class Workload:
    """What one call of a task must do at least."""

    bytes_moved: int  # inputs + outputs + parameters, each once
    flops: int  # FlopCounterMode (matmul, conv, attention) + one per output element of other compute ops
    fresh_bytes: int = 0  # of those, the inputs and outputs (new every call); 0: not counted apart

    def window_bytes(self, calls: int) -> int:
        """What a window of ``calls`` calls touches: every call's inputs and outputs, the parameters once."""
        fresh = self.fresh_bytes or self.bytes_moved
        return self.bytes_moved + max(0, calls - 1) * fresh


@dataclass(frozen=True)
class MachinePeaks:
    """This machine's measured peaks for one backend and thread count (best of repeated probes)."""

    backend: str
    device: str  # e.g. "AMD EPYC, 2 threads" or "NVIDIA H100"
    threads: int
    bandwidth: tuple[tuple[int, float], ...]  # (working-set bytes, GB/s), increasing working sets
    compute_gflops: float  # fp32 FMA throughput (2 FLOPs per lane per FMA)
    probed_at: str = ""  # ISO time
    probe_seconds: float = 0.0
    load_average: float = 0.0  # 1-minute load average when the probe started (> CPUs: peaks understated)

    def __post_init__(self) -> None:
        if not self.bandwidth or self.compute_gflops <= 0 or any(g <= 0 for _, g in self.bandwidth):
            raise ValueError("MachinePeaks: a bandwidth curve and a positive compute peak are required")

    @property
    def memory_gbs(self) -> float:
        """Bandwidth from memory: the triad over the largest working set probed."""
        return self.bandwidth[-1][1]

    def bandwidth_at(self, working_set: int) -> float:
        """The roof for a working set: the probed bandwidth at the largest probed set not above it
        (a smaller set runs from a faster level, so this never understates what is attainable)."""
        fitting = [gbs for size, gbs in self.bandwidth if size <= working_set]
        return fitting[-1] if fitting else self.bandwidth[0][1]

    def summary(self) -> str:
        curve = ", ".join(f"{_size(size)} {gbs:.1f}" for size, gbs in self.bandwidth)
        return (f"memory bandwidth {self.memory_gbs:.1f} GB/s (triad; by working set: {curve} GB/s), "
                f"compute {self.compute_gflops:.1f} GFLOP/s (fp32 FMA), {self.device}")


@dataclass(frozen=True)
class RooflinePosition:
    bytes_moved: int
    flops: int
    seconds: float  # the measured time of one call
    achieved_gbs: float
    achieved_gflops: float
    roof_gbs: float  # bandwidth roof at this working set (the timed window's)
    memory_gbs: float  # bandwidth from memory (largest working set)
    peak_gflops: float
    bound: str  # "memory" | "compute": which roof binds at this arithmetic intensity
    fraction: float  # the shortest possible time over the measured time (1.0 = on the roof)
    implausible: bool
    window_bytes: int = 0  # the working set of the timed window the time came from (0: one call's)
    limit_seconds: float = 0.0  # the shortest time one call's own roof allows (what implausible is judged on)

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes_moved if self.bytes_moved else 0.0

    @property
    def min_seconds(self) -> float:
        return self.fraction * self.seconds

    def line(self) -> str:
        """One line of feedback, e.g. "roofline: memory-bound (0.125 FLOP/byte); reaches 38% of ..."."""
        share = _percent(self.fraction)
        if self.bound == "compute":
            reach = (f"reaches {share} of measured compute peak "
                     f"({self.achieved_gflops:.3g} GFLOP/s of {self.peak_gflops:.3g} GFLOP/s)")
        elif self.roof_gbs > FROM_CACHE * self.memory_gbs:  # the working set fits a cache level
            level = "at that size" if self.window_bytes else "from cache"  # a window's set: the probe's, not a level
            reach = (f"reaches {share} of measured bandwidth for its {self._working_set()} "
                     f"working set ({self.achieved_gbs:.3g} GB/s of {self.roof_gbs:.3g} GB/s {level}; "
                     f"{self.memory_gbs:.3g} GB/s from memory)")
        else:
            where = (f"; every call has fresh inputs, so a timed window's {_size(self.window_bytes)} come from memory"
                     if self.window_bytes else "")
            reach = (f"reaches {share} of measured memory bandwidth "
                     f"({self.achieved_gbs:.3g} GB/s of {self.roof_gbs:.3g} GB/s{where})")
        return f"roofline: {self.bound}-bound ({self.intensity:.3g} FLOP/byte); {reach}"

    def _working_set(self) -> str:
        if self.window_bytes:
            return f"{_size(self.bytes_moved)} a call ({_size(self.window_bytes)} a timed window)"
        return _size(self.bytes_moved)

    def implausible_reason(self) -> str:
        """Why the time is implausible ("" when it is not)."""
        if not self.implausible:
            return ""
        return (f"{self.seconds * 1e3:.3g} ms is faster than this machine's measured peaks allow for "
                f"{_size(self.bytes_moved)} and {self.flops:.3g} FLOPs (at least {self._limit() * 1e3:.3g} ms; "
                f"{self._limit() / self.seconds:.0%} of the roof)")

    def _limit(self) -> float:
        return self.limit_seconds or self.min_seconds


def position(workload: Workload, seconds: float, peaks: MachinePeaks, calls: int = 1) -> RooflinePosition | None:
    """The roofline position of a call that took ``seconds``, timed in windows of ``calls`` calls;
    None without a positive time or bytes."""
    if seconds <= 0 or workload.bytes_moved <= 0:
        return None
    window = workload.window_bytes(max(1, calls))
    roof = peaks.bandwidth_at(window)
    memory_s = workload.bytes_moved / (roof * 1e9)
    compute_s = workload.flops / (peaks.compute_gflops * 1e9)
    shortest = max(memory_s, compute_s)
    # implausible only against one call's own roof (the faster level where its working set alone fits):
    # a window's roof is a probe's estimate of where the inputs are, and a probe on a loaded machine
    # understates memory bandwidth (59.6 and 36.3 GB/s here an hour apart): an honest kernel is never flagged on it
    limit = max(workload.bytes_moved / (peaks.bandwidth_at(workload.bytes_moved) * 1e9), compute_s)
    return RooflinePosition(
        bytes_moved=workload.bytes_moved, flops=workload.flops, seconds=seconds,
        achieved_gbs=workload.bytes_moved / seconds / 1e9, achieved_gflops=workload.flops / seconds / 1e9,
        roof_gbs=roof, memory_gbs=peaks.memory_gbs, peak_gflops=peaks.compute_gflops,
        bound="memory" if memory_s >= compute_s else "compute", fraction=shortest / seconds,
        implausible=seconds * PLAUSIBLE_MARGIN < limit, window_bytes=window if window > workload.bytes_moved else 0,
        limit_seconds=limit)


def _percent(fraction: float) -> str:
    """A share as a percentage with at least two significant digits below 10% (0.004%, not 0%)."""
    return f"{fraction:.0%}" if fraction >= 0.1 else f"{100 * fraction:.2g}%"


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"
