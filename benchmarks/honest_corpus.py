"""False rejections of the honest fixture corpus (tests/fixtures/kernels/honest_*.py, issue 24):
every honest kernel goes through the real verifier and this prints, per backend, how many pass
and which are rejected, grouped by cause, with the verbatim reasons.

"pass" is the corpus's own meaning (tests/verifier/verifier_corpus.py): every gate that can run
here passes; a cuda or triton kernel on a machine without a GPU fails only at the first gate that
is "unavailable here" (cuda: correctness after the real nvcc compile; triton: latency after the
AOT compile and the interpreter's correctness check). Anything else is a false rejection: every
fixture is a correct kernel (``--direct`` and ``--no-static`` check that the fixtures themselves
are right).

Modes:
- default: the verifier as it ships (VerifySettings.for_tests, fixed seed).
- ``--no-static``: every static check disabled (hack_python.CHECKS, hack_native.NATIVE_CHECKS and
  c_undefined_symbols), so what is left of a rejection is the compile/correctness judgement (and the
  statically read build arguments, which no setting turns off).
- ``--direct``: no verifier at all: each cpu/triton fixture is imported in a plain subprocess
  (triton in its interpreter on the CPU, on the verifier's small shapes) and its ModelNew compared
  with the task's Model on five input distributions (an ``@triton.autotune`` kernel runs its first config
  there); cuda needs a GPU and is skipped.

Run: .venv/bin/python -m benchmarks.honest_corpus [--backend cpu,cuda,triton] [--names 'honest_cpu_*']
     [--covers 'honest (issue 24)'] [--jobs 2] [--no-static] [--direct] [--json out.json]
A full run takes long: every cuda fixture is an nvcc build on torch's headers (~2 min of CPU each) and
every cpu load_inline fixture a torch extension build (~45 s); compile results are cached in --cache.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "verifier"))  # the corpus's header parser and task loader

from verifier_corpus import CorpusEntry, corpus  # noqa: E402
from verifier_taskutil import TASKS, fixture_task  # noqa: E402

from verifier.api import verify  # noqa: E402
from verifier.gate_plan import is_unavailable  # noqa: E402
from verifier.gates.hack_native import NATIVE_CHECKS  # noqa: E402
from verifier.gates.hack_python import CHECKS  # noqa: E402
from verifier.result import Verdict  # noqa: E402
from verifier.settings import VerifySettings  # noqa: E402

SEED = 20261121  # the corpus test's seed
CUDA_COMPILE_S = 900.0
ALL_STATIC_CHECKS = (*CHECKS, *NATIVE_CHECKS, "c_undefined_symbols")
_FINDING = re.compile(r"^(\w+) \((?:line \d+[^)]*)\): (.*)$")


def honest_entries(backends: set[str], names: str, covers: str = "") -> list[CorpusEntry]:
    globs = names.split(",")
    return [e for e in corpus() if e.kind == "honest" and e.backend in backends
            and any(fnmatch.fnmatch(e.name, g) for g in globs) and e.covers.startswith(covers)]


def causes(verdict: Verdict) -> list[str]:
    """The rejection's causes, without line numbers: one per static finding, else the gate's reason."""
    gate = verdict.gate(verdict.failed_gate)
    if gate.name == "hack":
        found = [f"hack/{m.group(1)}: {m.group(2)}" for line in (gate.detail or gate.reason).splitlines()
                 if (m := _FINDING.match(line.strip()))]
        if found:
            return found
    return [f"{gate.name}: " + re.sub(r"\bline \d+", "line N", gate.reason)]


def outcome(verdict: Verdict) -> str:
    if verdict.infrastructure_error:
        return "infrastructure"
    if verdict.failed_gate is None:
        return "pass"
    return "pass" if is_unavailable(verdict.gate(verdict.failed_gate)) else "rejected"


def verify_entry(entry: CorpusEntry, cache: Path, no_static: bool) -> dict:
    changes: dict = {"seed": SEED, "disabled_checks": ALL_STATIC_CHECKS if no_static else entry.disable}
    if entry.backend == "cuda":
        changes["compile_timeout_s"] = CUDA_COMPILE_S
    if entry.timeout_s:
        changes["timeout_s"] = entry.timeout_s
    verdict = verify(fixture_task(entry.task), entry.path.read_text(), entry.backend,
                     VerifySettings.for_tests(cache, **changes))
    row = {"name": entry.name, "backend": entry.backend, "outcome": outcome(verdict),
           "gate": verdict.failed_gate or "pass", "seconds": round(verdict.seconds, 1)}
    if verdict.infrastructure_error:
        row["reason"] = verdict.infrastructure_error
    elif row["outcome"] == "rejected":
        row["reason"] = verdict.gate(verdict.failed_gate).reason
        row["causes"] = causes(verdict)
    return row


DIRECT = r'''
import importlib.util, os, sys
backend, task_path, cand_path, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
if backend == "triton":
    os.environ["TRITON_INTERPRET"] = "1"
import torch
from verifier.backends.small_shapes import shrink_task_source
torch.set_num_threads(2)
if backend == "triton":  # no GPU to benchmark @triton.autotune configs: the first config stands in
    import triton

    def _first_config(configs, key, **_):
        return triton.heuristics({k: (lambda args, v=v: v) for k, v in configs[0].kwargs.items()})
    triton.autotune = _first_config

def module(name, path, text=None):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    if text is None:
        spec.loader.exec_module(mod)
    else:
        exec(compile(text, path, "exec"), mod.__dict__)
    return mod

text = open(task_path).read()
task = module("task", task_path, shrink_task_source(text) if backend == "triton" else text)
cand = module("candidate", cand_path)
init = task.get_init_inputs()
torch.manual_seed(7); ref = task.Model(*init).eval()
torch.manual_seed(7); new = cand.ModelNew(*init).eval()
for trial, scale in enumerate((1.0, 1e3, 1e-3, -1.0, 1.0)):
    torch.manual_seed(100 + trial)
    inputs = [x * scale if x.is_floating_point() and scale > 0 else (-x.abs() if x.is_floating_point() else x)
              for x in task.get_inputs()]
    copies = [x.clone() for x in inputs]
    with torch.no_grad():
        want, got = ref(*inputs), new(*copies)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(want) == len(got), f"{len(got)} outputs, want {len(want)}"
    for w, g in zip(want, got):
        assert g.shape == w.shape and g.dtype == w.dtype, f"trial {trial}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
        close = torch.allclose(g, w, atol=tol if w.is_floating_point() else 0, rtol=tol, equal_nan=True)
        if not close and w.is_floating_point():  # long sums of large inputs: their error scales with the norm
            close = bool(torch.isfinite(g).all()) and (g - w).double().norm() <= tol * w.double().norm()
        if not close:
            bad = (g - w).abs().max().item() if w.is_floating_point() else (g != w).sum().item()
            raise SystemExit(f"trial {trial} (x{scale}): max error {bad}")
    assert all(torch.equal(a, b) for a, b in zip(inputs, copies)), "inputs modified"
print("ok")
'''


def direct_entry(entry: CorpusEntry, cache: Path) -> dict:
    """The fixture itself, outside the verifier: ModelNew against the task's Model."""
    row = {"name": entry.name, "backend": entry.backend}
    if entry.backend == "cuda":
        return {**row, "outcome": "skipped", "reason": "needs a GPU"}
    task = fixture_task(entry.task)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache / "direct-xdg"), "PYTHONPATH": str(ROOT),
           "TORCH_EXTENSIONS_DIR": str(cache / "direct-torch-ext")}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", DIRECT, entry.backend, str(TASKS / f"{entry.task}.py"),
                           str(entry.path), str(task.atol)], capture_output=True, text=True, env=env, timeout=900)
    text = (proc.stdout + proc.stderr).strip()
    ok = proc.returncode == 0 and proc.stdout.strip().endswith("ok")
    return {**row, "outcome": "pass" if ok else "rejected", "gate": "direct", "seconds": round(time.perf_counter() - start, 1),
            **({} if ok else {"reason": text[-600:], "causes": ["direct: " + text.splitlines()[-1][:200] if text else "no output"]})}


def summarise(rows: list[dict]) -> str:
    lines = []
    for backend in sorted({r["backend"] for r in rows}):
        mine = [r for r in rows if r["backend"] == backend]
        count = defaultdict(int)
        for r in mine:
            count[r["outcome"]] += 1
        lines.append(f"== {backend}: {len(mine)} honest fixtures: {count['pass']} pass, {count['rejected']} false "
                     f"rejections" + "".join(f", {n} {k}" for k, n in sorted(count.items()) if k not in ("pass", "rejected")))
        by_cause = defaultdict(list)
        for r in mine:
            for cause in dict.fromkeys(r.get("causes", [])):
                by_cause[cause].append(r["name"])
        for cause, names in sorted(by_cause.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {len(names):3d}  {cause}\n         {', '.join(sorted(names))}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu,cuda,triton")
    parser.add_argument("--names", default="honest_*", help="comma-separated globs over fixture names")
    parser.add_argument("--covers", default="", help='only entries whose covers line starts so ("honest (issue 24)")')
    parser.add_argument("--jobs", type=int, default=2, help="verifications in flight (they mostly wait on sandboxes)")
    parser.add_argument("--no-static", action="store_true", help="disable every static check")
    parser.add_argument("--direct", action="store_true", help="run the fixtures outside the verifier")
    parser.add_argument("--cache", default=str(ROOT / "runs" / "honest-corpus-cache"))
    parser.add_argument("--json", help="write one row per fixture here")
    args = parser.parse_args()
    entries = honest_entries(set(args.backend.split(",")), args.names, args.covers)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    one = (lambda e: direct_entry(e, cache)) if args.direct else (lambda e: verify_entry(e, cache, args.no_static))
    print(f"{len(entries)} honest fixtures, {args.jobs} at a time, load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores", flush=True)
    start, rows = time.perf_counter(), []
    with ThreadPoolExecutor(args.jobs) as pool:
        for row in pool.map(one, entries):
            rows.append(row)
            print(f"{row['name']:58s} {row['backend']:7s} {row['outcome']:9s} {row.get('gate', ''):12s} "
                  f"{row.get('seconds', 0):6.1f}s  {row.get('reason', '')[:160]}", flush=True)
    print(f"\n{len(rows)} fixtures in {time.perf_counter() - start:.0f} s\n" + summarise(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
