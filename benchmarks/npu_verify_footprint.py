"""One triton-ascend verification at KernelBench's original sizes: seconds, peak memory, verdict.

For each of three honest kernels written for this project (tests/backends/triton_ascend_kernels:
an online-softmax LogSoftmax, a sum-of-abs L1Norm and a grid-stride Sigmoid) on its KernelBench
task at the original sizes (LogSoftmax and Sigmoid 4096 x 393216, L1Norm 32768 x 65535: 6.4 and
8.6 GB of input), run ``verifier.api.verify`` once with a fresh verifier cache and report the
gates, the wall seconds and the peak resident memory of the whole verification: a sampler
thread sums VmRSS over this process and every descendant (sandbox child, reference worker, the
toolchain driver, its recording fork, bishengir-compile) every 20 ms; the peak of that sum is the
figure (shared pages are counted once per process, so it overstates). The interpreter sizes are
computed first (cached per task, as in a campaign after the first draft) and not counted.

Run: .venv/bin/python -m benchmarks.npu_verify_footprint [--kernelbench PATH] [--task 24_LogSoftmax]
(needs the triton-ascend toolchain and upstream triton; takes a few minutes on a busy 2-core host)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import threading
import time
from pathlib import Path

from kernelbench_npu.spec import TaskSpec

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "backends" / "triton_ascend_kernels"
TRIALS = {"24_LogSoftmax": "kb_log_softmax", "38_L1Norm_": "kb_l1_norm", "21_Sigmoid": "kb_sigmoid"}


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _kib_field(path: str, field: str) -> int:
    """Bytes of a "Field:  N kB" line of a /proc file (0 once the process is gone)."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes(pid: int) -> int:
    return _kib_field(f"/proc/{pid}/status", "VmRSS:")


def pss_bytes(pid: int) -> int:
    """The process's proportional set size: shared pages (torch's libraries, mapped by every sandbox
    process) counted once over all their users, so a tree's sum is the memory it really holds."""
    return _kib_field(f"/proc/{pid}/smaps_rollup", "Pss:")


class PeakRss:
    """Samples the summed RSS (and PSS) of this process tree until stopped; ``peak``/``peak_pss`` in bytes."""

    def __init__(self, interval_s: float = 0.02) -> None:
        self.interval_s, self.peak, self.peak_pss, self.processes = interval_s, 0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            pids = descendants(me)
            self.peak = max(self.peak, sum(rss_bytes(p) for p in pids))
            self.peak_pss = max(self.peak_pss, sum(pss_bytes(p) for p in pids))
            self.processes = max(self.processes, len(pids))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def task_spec(path: Path) -> TaskSpec:
    source = path.read_text()
    return TaskSpec(task_id=f"KB-L1/{path.stem}", level=1, category="trial", name=path.stem, variant="triton-ascend",
                    dtype="float32", source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(),
                    atol=1e-5, rtol=1e-4, original_shapes="{}", adapted_shapes="{}", lint_status="ok",
                    lint_reason=None, reference_ms=None, problem_path=path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", type=Path, default=Path("/work/kernelbench/KernelBench"))
    parser.add_argument("--task", action="append", choices=sorted(TRIALS), help="default: all three")
    args = parser.parse_args()
    from verifier.api import verify
    from verifier.backends.small_shapes import interpreter_fit
    from verifier.settings import VerifySettings

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name in args.task or sorted(TRIALS):
        path = args.kernelbench / "level1" / f"{name}.py"
        task = task_spec(path)
        small = interpreter_fit(task.source)
        with tempfile.TemporaryDirectory() as cache:
            settings = VerifySettings.for_tests(Path(cache))
            start = time.perf_counter()
            with PeakRss() as peak:
                verdict = verify(task, (KERNELS / f"{TRIALS[name]}.py").read_text(), "triton-ascend", settings)
            seconds = time.perf_counter() - start
        gates = ", ".join(f"{g.name} {'pass' if g.passed else 'FAIL'} {g.seconds:.1f} s" for g in verdict.gates)
        print(f"{task.task_id}: correctness at {small['input_shapes']}; {gates}; {seconds:.1f} s; peak RSS "
              f"{peak.peak / 2**20:.0f} MiB (PSS {peak.peak_pss / 2**20:.0f} MiB) over {peak.processes} processes")
        for gate in verdict.gates:
            if gate.reason:
                print(f"    {gate.name}: {gate.reason[:160]}")


if __name__ == "__main__":
    main()
