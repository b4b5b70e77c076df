"""What the hack gate's static policy costs per verification and what it refuses on the fixture
corpus (medians of repeats; the machine's load shifts every figure alike):

- text tier: ``static_findings`` (the Python checks plus the native text checks of every source
  the candidate declares) on each fixture of tests/fixtures/kernels, and the findings per kind
  (honest fixtures flagged are false rejections; hack fixtures flagged are refused before running);
- build tier: ``check_units`` on a load_c library g++ builds here (preprocessed lines, includes,
  undefined symbols), and ``symbol_findings`` on a load_inline extension if one is given
  (``--extension path/to/module.so``; a torch extension takes ~1-2 min to build).

Run: .venv/bin/python -m benchmarks.static_policy [--repeats 5] [--extension x.so]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from verifier import cpu_native
from verifier.backends import get_backend
from verifier.backends.base import BuiltUnit
from verifier.gates.hack import static_findings
from verifier.gates.hack_build import check_units
from verifier.gates.native_symbols import symbol_findings
from verifier.sandbox import isolation

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "verifier"))
from verifier_corpus import corpus  # noqa: E402  (the corpus header parser lives with the tests)


def _ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench_corpus(repeats: int) -> None:
    per_fixture, flagged = [], Counter()
    kinds = Counter()
    for entry in corpus():
        source = entry.path.read_text()
        imports = get_backend(entry.backend).static_imports
        findings = static_findings(source, "float32", entry.disable, imports)
        kinds[entry.kind] += 1
        flagged[entry.kind] += bool(findings)
        per_fixture.append(_ms(lambda: static_findings(source, "float32", entry.disable, imports), repeats))
    per_fixture.sort()
    print(f"text tier on {len(per_fixture)} fixtures: median {statistics.median(per_fixture):.1f} ms, "
          f"p90 {per_fixture[int(0.9 * len(per_fixture))]:.1f} ms, max {per_fixture[-1]:.1f} ms")
    for kind in sorted(kinds):
        print(f"  {kind}: {flagged[kind]} of {kinds[kind]} refused by the text tier")


def bench_build(repeats: int, extension: str | None) -> None:
    source = (ROOT / "tests/fixtures/kernels/honest_relu_omp.py").read_text().split('r"""')[1].split('"""')[0]
    roots = (*isolation.SYSTEM_READ_EXEC, *isolation.runtime_read_exec())
    with tempfile.TemporaryDirectory() as tmp:
        result = cpu_native.build(source, Path(tmp))
        unit = BuiltUnit("load_c source", result.preprocessed, result.includes, (result.library,))
        print(f"build tier on a load_c library: {_ms(lambda: check_units([unit], roots), repeats):.1f} ms "
              f"({len(check_units([unit], roots))} findings)")
    if extension:
        ms = _ms(lambda: symbol_findings(extension, "load_inline"), repeats)
        print(f"symbols of {Path(extension).name}: {ms:.1f} ms ({len(symbol_findings(extension, 'load_inline'))} "
              "findings)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--extension", help="a built load_inline module (.so) to time the symbol check on")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    bench_corpus(args.repeats)
    bench_build(args.repeats, args.extension)


if __name__ == "__main__":
    main()
