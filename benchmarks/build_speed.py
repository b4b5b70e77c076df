"""Benchmark build speed and reproducibility: `python -m benchmarks.build_speed [--variants cpu,ascendc]`.

Prints, per variant of the bundled set: wall time, ok/quarantined per level; for the first variant it
also rebuilds and prints the bit-identity check (hash, manifest.parquet, and everything but
measurements.parquet). Timings are from a shared machine: expect noise.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path

from kernelbench_npu.build import build_benchmark


def _digest(root: Path, skip: str = "") -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != skip):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _counts(summary) -> str:
    return ", ".join(f"L{c.level} {c.ok} ok / {c.quarantined} quarantined" for c in summary.counts)


def _rebuild_check(first: Path, second: Path, hashes: tuple[str, str]) -> None:
    manifest_bytes = (first / "manifest.parquet").read_bytes() == (second / "manifest.parquet").read_bytes()
    print(f"  rebuild: same hash {hashes[0] == hashes[1]} ({hashes[0][:16]})")
    print(f"  rebuild: manifest.parquet byte-identical {manifest_bytes}")
    print(f"  rebuild: everything but measurements.parquet byte-identical "
          f"{_digest(first, 'measurements.parquet') == _digest(second, 'measurements.parquet')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="cpu,ascendc,cuda,triton", help="comma-separated backends")
    parser.add_argument("--out", type=Path, default=None, help="keep builds here (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="build-speed-") as tmp:
        root = args.out or Path(tmp)
        for i, backend in enumerate(v for v in args.variants.split(",") if v):
            started = time.perf_counter()
            summary = build_benchmark(backend, out=root / f"build-{backend}")
            print(f"{backend}: {time.perf_counter() - started:.1f} s wall, {summary.ok + summary.quarantined} tasks: {_counts(summary)}")
            if i == 0:
                started = time.perf_counter()
                again = build_benchmark(backend, out=root / f"build-{backend}-again")
                print(f"{backend} rebuild: {time.perf_counter() - started:.1f} s wall")
                _rebuild_check(summary.out, again.out, (summary.build_hash, again.build_hash))


if __name__ == "__main__":
    main()
