"""Where a harness's timing distortion comes from, one part at a time: each known-good kernel and its
reference timed plainly (benchmarks.plain_timing, each side alone in a fresh process), then with one
thing a harness may add around a call, and the speedup under each against the plain one:

- copy out: every output copied into shared memory inside the timed call (the verifier's former
  protocol: the runner wrote its outputs into the arena before it answered);
- shm in: inputs that view a shared memory file instead of private memory;
- passive OpenMP: OMP_WAIT_POLICY=PASSIVE (the former sandbox setting: idle OpenMP threads sleep at
  once, so every parallel region wakes its threads with a system call);
- gap: 5 ms idle before every call (the other side ran in between: threads asleep, caches cold);
- the fixed cost of a timed window (pipe messages, a process woken) and what the latency gate now
  leaves of it: benchmarks.timing_floor.

Run: .venv/bin/python -m benchmarks.timing_parts [--tasks L1/003_gelu,...] [--build runs/build-cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.known_good_speedups import _build_dir, _load

TASKS = ("L1/001_relu", "L1/003_gelu", "L1/013_softmax", "L1/016_rms_norm", "L1/019_matmul_square",
         "L1/032_cross_entropy_loss", "L2/001_gemm_bias_relu", "L2/014_add_layernorm_scale")
PARTS = {"plain": [], "copy out": ["--copy-out"], "shm in": ["--shm-in"], "passive OpenMP": ["passive"],
         "gap 5 ms": ["--gap-ms", "5"]}


def timed(mode: str, build: Path, task_id: str, extra: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env.update(OMP_NUM_THREADS="2", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    if "passive" in extra:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    flags = [f for f in extra if f != "passive"]
    out = subprocess.run([sys.executable, "-m", "benchmarks.plain_timing", mode, str(build), task_id, *flags],
                         env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{task_id} {mode} {extra}: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)["ms"]


def row(build: Path, task_id: str) -> dict:
    found = {}
    for part, extra in PARTS.items():
        ref, cand = timed("ref", build, task_id, extra), timed("cand", build, task_id, extra)
        found[part] = {"ref_ms": ref, "cand_ms": cand, "speedup": ref / cand}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--build", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    print(f"start: {_load()}")
    print(f"{'task':30s} " + " ".join(f"{p:>16s}" for p in PARTS) + "   (speedup; under each part: / plain)")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="timing-parts-") as tmp:
        build = _build_dir(args.build, Path(tmp))
        for task_id in [t for t in args.tasks.split(",") if t]:
            rows[task_id] = found = row(build, task_id)
            plain = found["plain"]["speedup"]
            cells = [f"{plain:16.2f}"] + [f"{found[p]['speedup']:8.2f} ({found[p]['speedup'] / plain:4.2f})"
                                          for p in list(PARTS)[1:]]
            print(f"{task_id:30s} " + " ".join(cells), flush=True)
    print(f"end: {_load()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
