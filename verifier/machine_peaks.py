"""This machine's measured peaks per backend, probed once and cached under the user cache.

``machine_peaks(backend, threads)`` returns the cached :class:`~verifier.roofline.MachinePeaks` for
(this machine, backend, thread budget), or probes them: the backend's ``probe_peaks`` hook
(verifier.backends.base) runs in a subprocess (``python -m verifier.machine_peaks BACKEND THREADS``),
so the verifying process never loads the probe's OpenMP runtime or a device context. Concurrent
verifications wait on a lock and probe once. A backend that cannot probe here, or a probe that
fails, gives no peaks and a reason: verdicts then carry no roofline, nothing fails.

Cache: ``$XDG_CACHE_HOME/evokernel/machine/<backend>-<threads>t-<fingerprint>.json``; the
fingerprint covers the host name, CPU model and count, and the visible devices, so a copied home
directory on another machine probes again. ``evokernel backends --probe`` re-probes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from verifier.settings import user_cache
from verifier.roofline import MachinePeaks

PROBE_TIMEOUT_S = 300.0  # a loaded 2-core machine; the CPU probe takes ~2 s when quiet


@dataclass(frozen=True)
class PeaksLookup:
    peaks: MachinePeaks | None
    source: str  # "cached" | "probed" | "unavailable"
    problem: str = ""  # why there are no peaks
    path: str = ""  # the cache file


def default_machine_dir() -> Path:
    return user_cache("machine")


def fingerprint(backend: str) -> str:
    """A short hash of what makes measured peaks this machine's."""
    parts = [platform.node(), platform.machine(), str(os.cpu_count()), cpu_model(), backend,
             os.environ.get("CUDA_VISIBLE_DEVICES", ""), os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "")]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def cache_path(backend: str, threads: int, directory: Path | None = None) -> Path:
    return (directory or default_machine_dir()) / f"{backend}-{threads}t-{fingerprint(backend)}.json"


def machine_peaks(backend: str, threads: int, directory: Path | None = None, refresh: bool = False) -> PeaksLookup:
    """The cached peaks of (this machine, backend, threads), probing them once when missing."""
    path = cache_path(backend, threads, directory)
    if not refresh and (cached := _read(path)) is not None:
        return PeaksLookup(cached, "cached", path=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.with_suffix(".lock")):
        if not refresh and (cached := _read(path)) is not None:  # probed by another process meanwhile
            return PeaksLookup(cached, "cached", path=str(path))
        peaks, problem = _probe_in_subprocess(backend, threads)
        if peaks is None:
            return PeaksLookup(None, "unavailable", problem, str(path))
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(peaks), indent=2))
        os.replace(tmp, path)
    return PeaksLookup(peaks, "probed", path=str(path))


def peaks_from_json(data: dict) -> MachinePeaks:
    values = dict(data)
    values["bandwidth"] = tuple((int(size), float(gbs)) for size, gbs in values["bandwidth"])
    return MachinePeaks(**values)


def _read(path: Path) -> MachinePeaks | None:
    """The cached peaks, or None when absent or unreadable (then they are probed again)."""
    try:
        return peaks_from_json(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        return None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _probe_in_subprocess(backend: str, threads: int) -> tuple[MachinePeaks | None, str]:
    cmd = [sys.executable, "-m", "verifier.machine_peaks", backend, str(threads)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"the {backend} probe timed out after {PROBE_TIMEOUT_S:.0f} s"
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"the {backend} probe failed: {tail}"
    answer = json.loads(lines[-1])
    if answer.get("problem"):
        return None, answer["problem"]
    return peaks_from_json(answer["peaks"]), ""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def probe(backend: str, threads: int) -> dict:
    """Subprocess side: run the backend's probe hook; {"peaks": ...} or {"problem": ...}."""
    from verifier.backends import get_backend

    impl = get_backend(backend)
    latency = next((g for g in impl.availability().gates if g.gate == "latency"), None)
    if latency is None or not latency.available:
        return {"problem": f"{backend}: no latency measurement here, so no peaks to compare with"}
    started, load = time.perf_counter(), os.getloadavg()[0]
    peaks = impl.probe_peaks(threads)
    if peaks is None:
        return {"problem": f"{backend}: this backend has no peak probe"}
    stamped = {**asdict(peaks), "probed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "probe_seconds": round(time.perf_counter() - started, 2), "load_average": round(load, 2)}
    return {"peaks": stamped}


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1], int(sys.argv[2]))))
