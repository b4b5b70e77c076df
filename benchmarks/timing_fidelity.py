"""Timing fidelity: does the verifier's speedup follow the kernel? Every known-good CPU solution
(kernelbench_npu/solutions/cpu, 52) on the bundled cpu build, timed plainly and by the verifier at
the same moment, one row each:

- solo: the reference alone in a fresh process, then the solution alone in another
  (benchmarks.plain_timing: 400 calls after warm-up on 8 input sets, 2 threads, median per call);
  three times each, interleaved, the faster run of each kept; speedup = reference ms / solution ms.
  The ratios of the runs taken pairwise (each reference run with the solution run after it) are its
  own spread: the machine's memory bandwidth here moves by 20-30% from one half second to the next
  (other tenants), which a run of a second or two does not average out;
- alternating: both in one process, call by call in ABBA order, the median per-pair ratio;
- alternating, passive: the same with OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep at once);
- verifier: ``verify()`` with default settings (its speedup, whether it trusts it, calls per window,
  rounds retimed);
- solo, sandbox allocator: where verifier / solo is outside 0.90-1.10, solo again with the allocator
  settings every sandbox process has (verifier.sandbox.spawn.ALLOCATOR) in place of glibc's defaults;
- solo, the verifier's regime: there too (every task with ``--regime-all``), solo with the sandbox's
  allocator, cycling through as many fresh input sets as the verifier's windows held and keeping as
  many outputs alive: every call's inputs come from memory, as in a window (fresh inputs each call,
  DESIGN.md §3), where 8 sets of a small task stay in the last-level cache. ``verifier / regime`` is
  what the harness itself adds or takes, the regime left out.

``verifier / solo`` is the fidelity (target on a quiet machine: median 0.97-1.03, every task
0.90-1.10; under ``--burners 2``, every task 0.85-1.15). Where solo and alternating disagree by more
than 10%, the ``why`` column says what the passive run shows: if it agrees with solo, the disagreement
is OpenMP interference (two runtimes in one process: the threads of whichever ran last spin while the
other runs); if alternating lies within solo's own spread (its runs' pairwise ratios, 10% either side),
it says so; if solo with the sandbox's allocator lies outside that spread, it names the side whose
milliseconds moved (glibc's heap trimmed and grown again around temporaries, measured per call);
otherwise it is left as unexplained, with the figures. Where the verifier is outside
0.90-1.10 of solo, it says which measured figure it agrees with (within 10%): solo with the sandbox's
allocator ("allocator"), solo in the verifier's regime ("inputs from memory"), solo's own spread, or the
alternating run; else "unexplained".

``--repeat N --tasks ONE``: the same kernel verified N times (largest / smallest speedup).
Burners (``--burners N``) run in sessions of their own, as other work on the machine would.
``--plain-from quiet.json`` takes the plain figures from an earlier (quiet) run and verifies only: the
verifier under load against the kernels' quiet truth. ``--cache DIR`` keeps the compiled candidates
between runs.

Run: .venv/bin/python -m benchmarks.timing_fidelity [--tasks L1/003_gelu,...] [--burners 2]
     [--repeat 5] [--json out.json] [--build runs/build-cpu] [--plain-from quiet.json] [--cache DIR]
     [--regime-all]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.known_good_speedups import _build_dir, _load
from benchmarks.reward_noise import BURNER
from kernelbench_npu.known_good import known_good, solution_for
from kernelbench_npu.spec import load_build
from verifier.api import verify
from verifier.sandbox.spawn import ALLOCATOR
from verifier.settings import VerifySettings

DISAGREE = 0.10


def start_burners(count: int) -> list[subprocess.Popen]:
    """Fluctuating CPU burners (busy and idle in random bursts of 50-500 ms), each its own session."""
    return [subprocess.Popen([sys.executable, "-c", BURNER], start_new_session=True) for _ in range(count)]


CALLS = {"n": 400}  # plain timing's calls per run (--calls)
SOLO_RUNS = {"n": 3}  # solo runs per side, the faster kept (--solo-runs)
NEAR = 0.10  # a figure the verifier is within this share of explains it
# what a verifier off solo agrees with, and the summary's count of each
OFF_KINDS = {"allocator": "off_by_allocator", "inputs": "off_by_inputs_from_memory", "spread": "off_within_solo_spread",
             "alternating": "off_agreeing_with_alternating", "unexplained": "off_unexplained"}


def plain(mode: str, build: Path, task_id: str, threads: int, passive: bool = False, allocator: bool = False,
          sets: int = 0) -> float:
    """One plain_timing run; ``sets``: that many fresh input sets cycled, as many outputs kept alive."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY" and k not in ALLOCATOR}
    env.update(OMP_NUM_THREADS=str(threads), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    if passive:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    if allocator:
        env.update(ALLOCATOR)
    out = subprocess.run([sys.executable, "-m", "benchmarks.plain_timing", mode, str(build), task_id,
                          "--threads", str(threads), "--calls", str(CALLS["n"]),
                          *(["--input-sets", str(sets), "--keep-out", str(sets)] if sets else [])], env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"plain timing of {task_id} ({mode}) failed: {out.stderr.strip()[-400:]}")
    value = json.loads(out.stdout)
    return value["ms"] if mode != "alt" else value["ratio"]


def solo(build: Path, task_id: str, threads: int, repeats: int = 3, allocator: bool = False, sets: int = 0) -> dict:
    """The faster run of each side, and the range of the runs' pairwise ratios (the solo figure's own
    spread)."""
    runs = {"ref": [], "cand": []}
    for _ in range(repeats):
        for mode in ("ref", "cand"):
            runs[mode].append(plain(mode, build, task_id, threads, allocator=allocator, sets=sets))
    ref, cand = min(runs["ref"]), min(runs["cand"])
    pairs = [r / c for r, c in zip(runs["ref"], runs["cand"])]
    return {"ref_ms": ref, "cand_ms": cand, "solo": ref / cand, "solo_range": [min(pairs), max(pairs)]}


def verified(task, source: str, settings: VerifySettings) -> dict:
    started = time.perf_counter()
    verdict = verify(task, source, "cpu", settings)
    if verdict.latency is None:
        gate = verdict.failed_gate or "infrastructure"
        reason = verdict.gate(gate).reason if verdict.gate(gate) else verdict.infrastructure_error
        return {"verifier": None, "failed": f"{gate}: {reason}"[:200]}
    lat = verdict.latency
    return {"verifier": lat.speedup, "ci": [lat.ci_low, lat.ci_high], "v_ref_ms": lat.reference_ms,
            "v_cand_ms": lat.candidate_ms, "trusted": lat.trusted, "untrusted_reason": lat.untrusted_reason,
            "retimed": lat.rounds_retimed,
            "calls": lat.calls_per_window, "priority": lat.priority, "late_ms": lat.late_ms, "early_ms": lat.early_ms,
            "seconds": time.perf_counter() - started}


def why(row: dict) -> str:
    """Why the plain methods disagree (if they do), then why the verifier is off solo (if it is)."""
    plain, (kind, off) = _plain_disagreement(row), _verifier_off(row)
    if kind == "spread" and plain.startswith("solo's own spread"):  # one spread holds both
        return plain.replace(" among them", f" and the verifier {row['verifier']:.2f}x among them")
    return "; ".join(part for part in (plain, off) if part)


def _plain_disagreement(row: dict) -> str:
    if abs(row["alt"] / row["solo"] - 1) <= DISAGREE or row.get("alt_passive") is None:
        return ""
    if abs(row["alt_passive"] / row["solo"] - 1) <= DISAGREE:
        return "OpenMP interference in one process (passive threads agree with solo)"
    low, high = row.get("solo_range") or (row["solo"], row["solo"])
    if low * (1 - NEAR) <= row["alt"] <= high * (1 + NEAR):
        return f"solo's own spread: its runs read {low:.2f}-{high:.2f}x, alternating {row['alt']:.2f}x among them"
    if row.get("solo_alloc") and row.get("alloc_ref_ms") and not low * (1 - NEAR) <= row["solo_alloc"] <= high * (1 + NEAR):
        return _allocator_moves_solo(row)
    return (f"plain methods disagree, unexplained: alternating {row['alt']:.2f}x, passive {row['alt_passive']:.2f}x, "
            f"solo {row['solo']:.2f}x")


def _allocator_moves_solo(row: dict) -> str:
    """Solo itself moves with the allocator: say which side moved, by its measured milliseconds."""
    ref, cand = row["alloc_ref_ms"] / row["ref_ms"], row["alloc_cand_ms"] / row["cand_ms"]
    side, before, after = (("the reference", row["ref_ms"], row["alloc_ref_ms"]) if abs(ref - 1) >= abs(cand - 1)
                           else ("the solution", row["cand_ms"], row["alloc_cand_ms"]))
    return (f"solo follows glibc's allocator: {side} reads {before:.3f} ms a call under its defaults, {after:.3f} ms "
            f"with the sandbox's allocator (solo {row['solo']:.2f}x against {row['solo_alloc']:.2f}x; alternating "
            f"{row['alt']:.2f}x, passive {row['alt_passive']:.2f}x)")


def _verifier_off(row: dict) -> tuple[str, str]:
    """("", "") where the verifier is within 0.90-1.10 of solo; else the kind of figure it agrees with
    ("allocator", "spread", "alternating" or "unexplained") and what the ``why`` column says."""
    verifier = row.get("verifier")
    if verifier is None or 0.90 <= verifier / row["solo"] <= 1.10:
        return "", ""
    low, high = row.get("solo_range") or (row["solo"], row["solo"])
    if row.get("solo_alloc") and abs(verifier / row["solo_alloc"] - 1) <= NEAR:
        return "allocator", f"allocator: solo with the sandbox's allocator reads {row['solo_alloc']:.2f}x"
    if row.get("solo_regime") and abs(verifier / row["solo_regime"] - 1) <= NEAR:
        return "inputs", (f"inputs from memory: solo with the sandbox's allocator on {row['regime_sets']} fresh input "
                          f"sets (a window's) reads {row['solo_regime']:.2f}x")
    if low * (1 - NEAR) <= verifier <= high * (1 + NEAR):
        return "spread", f"solo's own spread: its runs read {low:.2f}-{high:.2f}x"
    if abs(verifier / row["alt"] - 1) <= NEAR:
        return "alternating", f"agrees with alternating ({row['alt']:.2f}x)"
    extra = f", solo with the sandbox's allocator {row['solo_alloc']:.2f}x" if row.get("solo_alloc") else ""
    extra += f", in the verifier's regime {row['solo_regime']:.2f}x" if row.get("solo_regime") else ""
    return "unexplained", f"verifier off, unexplained: solo runs {low:.2f}-{high:.2f}x{extra}"


def row_for(build: Path, task, threads: int, settings: VerifySettings, known: dict | None = None,
            regime_all: bool = False) -> dict:
    """One task's row; ``known``: an earlier run's plain figures (verify only); ``regime_all``: solo in the
    verifier's regime measured whatever the fidelity (plain figures of this moment only)."""
    source = solution_for(task.task_id, task.source)
    if known:  # the plain figures of an earlier run
        row = {k: known.get(k) for k in ("task_id", "ref_ms", "cand_ms", "solo", "solo_range", "alt", "alt_passive",
                                         "solo_alloc", "alloc_ref_ms", "alloc_cand_ms", "solo_regime", "regime_sets")}
    else:
        row = {"task_id": task.task_id, **solo(build, task.task_id, threads, SOLO_RUNS["n"])}
        row["alt"] = plain("alt", build, task.task_id, threads)
        disagree = abs(row["alt"] / row["solo"] - 1) > DISAGREE  # only then is the passive run needed (why)
        row["alt_passive"] = plain("alt", build, task.task_id, threads, passive=True) if disagree else None
    row.update(verified(task, source, settings))
    if row["verifier"] is not None:
        row["fidelity"] = row["verifier"] / row["solo"]
        off = not 0.90 <= row["fidelity"] <= 1.10
        if not known and (off or _plain_unexplained(row)):  # plain figures of this moment only (never under burners)
            alloc = solo(build, task.task_id, threads, SOLO_RUNS["n"], allocator=True)
            row.update(solo_alloc=alloc["solo"], alloc_ref_ms=alloc["ref_ms"], alloc_cand_ms=alloc["cand_ms"])
        if not known and (off or regime_all):
            row["regime_sets"] = row["calls"]
            row["solo_regime"] = solo(build, task.task_id, threads, SOLO_RUNS["n"], allocator=True,
                                      sets=row["calls"])["solo"]
        if row.get("solo_regime"):
            row["fidelity_regime"] = row["verifier"] / row["solo_regime"]
    row["why"] = why(row)
    return row


def _plain_unexplained(row: dict) -> bool:
    """Solo and alternating disagree and the passive run does not side with solo: the allocator is measured."""
    return row.get("alt_passive") is not None and abs(row["alt_passive"] / row["solo"] - 1) > DISAGREE


def print_row(row: dict) -> None:
    if row.get("verifier") is None:
        print(f"{row['task_id']:34s} solo {row['solo']:6.2f}x  verifier failed: {row['failed']}", flush=True)
        return
    trust = "" if row["trusted"] else f"  (not trusted: {row.get('untrusted_reason', '')[:160]})"
    regime = f"  regime {row['solo_regime']:5.2f}x -> {row['fidelity_regime']:.3f}" if row.get("fidelity_regime") else ""
    print(f"{row['task_id']:34s} {row['ref_ms']:8.3f} {row['cand_ms']:8.3f}  solo {row['solo']:6.2f}x  alt "
          f"{row['alt']:6.2f}x  passive {_x(row['alt_passive'])}  verifier {row['verifier']:6.2f}x "
          f"[{row['ci'][0]:.2f}-{row['ci'][1]:.2f}] x{row['calls']:<3d} -> {row['fidelity']:.3f}"
          f"{regime}{trust}  {row['why']}", flush=True)


def _x(value: float | None) -> str:
    return "     -" if value is None else f"{value:5.2f}x"


def summary(rows: list[dict]) -> dict:
    fid = [r["fidelity"] for r in rows if r.get("fidelity")]
    if not fid:
        return {}
    return {"tasks": len(rows), "measured": len(fid), "median": statistics.median(fid), "min": min(fid),
            "max": max(fid), "within_0.90_1.10": sum(0.90 <= f <= 1.10 for f in fid),
            "within_0.85_1.15": sum(0.85 <= f <= 1.15 for f in fid),
            "untrusted": sum(not r.get("trusted", True) for r in rows if r.get("verifier") is not None),
            **{key: sum(_verifier_off(r)[0] == kind for r in rows) for kind, key in OFF_KINDS.items()},
            **_regime_summary(rows)}


def _regime_summary(rows: list[dict]) -> dict:
    """verifier / solo in the verifier's regime, where measured: what the harness adds or takes."""
    fid = [r["fidelity_regime"] for r in rows if r.get("fidelity_regime")]
    if not fid:
        return {}
    return {"regime": {"measured": len(fid), "median": statistics.median(fid), "min": min(fid), "max": max(fid),
                       "within_0.90_1.10": sum(0.90 <= f <= 1.10 for f in fid),
                       "within_0.85_1.15": sum(0.85 <= f <= 1.15 for f in fid)}}


def repeatability(task, settings: VerifySettings, times: int) -> dict:
    source = solution_for(task.task_id, task.source)
    speedups = []
    for i in range(times):
        result = verified(task, source, settings)
        speedups.append(result["verifier"])
        print(f"  run {i + 1}: {result['verifier']:.3f}x [{result['ci'][0]:.2f}-{result['ci'][1]:.2f}] trusted "
              f"{result['trusted']}{'' if result['trusted'] else ' (' + result['untrusted_reason'][:160] + ')'}, "
              f"{result['retimed']} rounds retimed, {_load()}", flush=True)
    return {"task_id": task.task_id, "speedups": speedups, "max_over_min": max(speedups) / min(speedups)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: every known-good solution)")
    parser.add_argument("--build", default=None, help="an existing cpu build of the bundled problems")
    parser.add_argument("--burners", type=int, default=0, help="fluctuating CPU burners while measuring")
    parser.add_argument("--repeat", type=int, default=0, help="verify the (first) task this many times instead")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--calls", type=int, default=400, help="plain timing's calls per run")
    parser.add_argument("--solo-runs", type=int, default=3, help="solo runs per side (the faster is kept)")
    parser.add_argument("--plain-from", default=None, help="an earlier run's --json: its plain figures, verify only")
    parser.add_argument("--cache", default=None, help="the verifier's cache directory (compiled candidates)")
    parser.add_argument("--regime-all", action="store_true",
                        help="solo in the verifier's regime for every task, not only where the verifier is off solo")
    args = parser.parse_args()
    CALLS["n"], SOLO_RUNS["n"] = args.calls, args.solo_runs
    known = {r["task_id"]: r for r in json.loads(Path(args.plain_from).read_text())["rows"]} if args.plain_from else {}
    wanted = [t for t in args.tasks.split(",") if t] or list(known_good("cpu"))
    with tempfile.TemporaryDirectory(prefix="timing-fidelity-") as tmp:
        build_dir = _build_dir(args.build, Path(tmp))
        build = load_build(build_dir)
        settings = VerifySettings(cache_dir=Path(args.cache or Path(tmp) / "cache"), threads=args.threads)
        burners = start_burners(args.burners)
        try:
            print(f"start: {_load()}; burners {args.burners}; {args.threads} threads per side", flush=True)
            if args.repeat:
                result = repeatability(build.task(wanted[0]), settings, args.repeat)
                print(f"largest / smallest speedup over {args.repeat} runs: {result['max_over_min']:.3f}")
            else:
                print(f"{'task':34s} {'ref ms':>8s} {'cand ms':>8s}  plain and verified speedups -> verifier/solo")
                rows = []
                for task_id in wanted:
                    rows.append(row_for(build_dir, build.task(task_id), args.threads, settings, known.get(task_id),
                                        args.regime_all and not args.burners))
                    print_row(rows[-1])
                result = {"rows": rows, "summary": summary(rows)}
                print("summary:", json.dumps(result["summary"]))
            print(f"end: {_load()}")
        finally:
            for proc in burners:
                proc.kill()
                proc.wait()
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
