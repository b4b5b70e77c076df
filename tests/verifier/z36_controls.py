"""The positive controls of issue 36's cases (tests/verifier/z36_outside_cases.py), each run in a plain
process with nothing confining it: ``python z36_controls.py CASE WORKDIR`` prints one JSON line saying
what the case did. A case that is rejected by the verifier is then shown to act, not to be broken.

- class 1 (and the cases beyond the issue's classes): forward's output equals the task's reference (the call into torch's compute, found by hash,
  did the work: the candidate's own code does no arithmetic);
- class 2: the same, with the native ATen observer loaded and armed as in the runner, and its page shows
  no forbidden operator afterwards (the observer was blinded), where a plain ``torch.relu`` is counted;
- class 3: once constructed, the process keeps using CPU while it is stopped (SIGSTOP) by its parent;
- class 6: more threads exist during a call than the runner's threads before it plus the thread budget.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "verifier")]

THREADS = 2  # the verifier's thread budget in the tests (VerifySettings.for_tests)


PREBUILT_ENV = "Z36_VERIFIER_CACHE"  # the run's verifier cache: a torch extension and the observer it built are reused


def load(case, work: Path):
    os.chdir(work)
    if case.torch_extension and os.environ.get(PREBUILT_ENV):
        _load_inline_from(Path(os.environ[PREBUILT_ENV]), work)
    module = types.ModuleType("candidate")
    exec(compile(case.source, "candidate.py", "exec"), module.__dict__)
    return module.ModelNew()


def _load_inline_from(cache_root: Path, work: Path) -> None:
    """``load_inline`` takes the library the verifier built for the same call, where its build cache holds it
    (verifier.monitor.build_cache, the key the monitor computes: the same sources and flags), and builds it
    as torch does otherwise: a g++ pass on torch's headers costs a minute of CPU, and the verdict test of
    the same case built it already. What runs is the candidate's own code either way, in this plain
    process; the monitor's copy only saves compiling it twice."""
    from torch.utils import cpp_extension

    from verifier.backends import cpu_builds
    from verifier.monitor.build_cache import BuildCache
    from verifier.sandbox.loaders import inline_arguments

    plain = cpp_extension.load_inline

    def load_inline(*args, **kwargs):
        named = inline_arguments(args, kwargs)
        job = cpu_builds.load_inline_job(named)
        entry = BuildCache(cache_root).get(job.key)
        if entry is None:
            return plain(*args, **kwargs)
        where = work / "prebuilt" / job.key
        where.mkdir(parents=True, exist_ok=True)
        name = Path(job.artifact).name
        (where / name).write_bytes(entry[name])
        return cpp_extension._import_module_from_library(named["name"], str(where), True)

    cpp_extension.load_inline = load_inline


def inputs(case):
    import torch

    from verifier_taskutil import fixture_task

    problem = types.ModuleType("problem")
    exec(compile(fixture_task(case.task).source, "problem.py", "exec"), problem.__dict__)
    torch.manual_seed(0)
    args = problem.get_inputs()
    return args, problem.Model()(*args)


def computes(case, work: Path) -> dict:
    import torch

    model = load(case, work)
    args, expected = inputs(case)
    out = model(*args)
    return {"acted": bool(torch.allclose(out, expected, atol=1e-4, rtol=1e-4)), "max_error": float((out - expected).abs().max())}


def computes_in_later_calls(case, work: Path) -> dict:
    """A case honest in its first calls: its borrowed path, from the 9th call on, computes the result."""
    import torch

    model = load(case, work)
    model.calls = 8
    args, expected = inputs(case)
    out = model(*args)
    return {"acted": bool(torch.allclose(out, expected, atol=1e-4, rtol=1e-4)), "max_error": float((out - expected).abs().max())}


def blinds_the_observer(case, work: Path) -> dict:
    import torch

    from verifier.sandbox.arena import Arena
    from verifier.sandbox.native_build import machine_root
    from verifier.sandbox.observer import PAGE_BYTES, ObserverPage, RunnerObserver, library

    path, why = library(machine_root(Path(os.environ.get(PREBUILT_ENV) or work / "cache")))  # the run's, where built
    if path is None:
        return {"acted": False, "why": why}
    page = ObserverPage(Arena.create(PAGE_BYTES, "z36-observer"))
    observer = RunnerObserver(page.arena, str(path))
    model = load(case, work)
    args, expected = inputs(case)
    observer.arm()
    with torch.no_grad():
        out = model(*args)
        seen_by_hack = page.read()
        torch.relu(args[0])  # the same operator, called plainly: the observer counts it
    seen_after = page.read()
    correct = bool(torch.allclose(out, expected, atol=1e-4, rtol=1e-4))
    return {"acted": correct and seen_by_hack.forbidden == 0 and seen_after.forbidden > 0,
            "correct": correct, "forbidden_during_hack": seen_by_hack.forbidden, "forbidden_plain": seen_after.forbidden}


def busy_while_stopped(case, work: Path) -> dict:
    """The candidate constructed in a child, stopped ten times for 0.1 s as the latency phase stops the side
    not being timed: its CPU time inside those stops (from just after each SIGSTOP)."""
    import subprocess

    child = subprocess.Popen([sys.executable, __file__, case.name, str(work), "--construct"], stdout=subprocess.PIPE)
    assert child.stdout.readline().strip() == b"constructed"
    used = 0
    for _ in range(10):
        time.sleep(0.05)
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(0.002)  # the signal delivered to every thread that can take it
        before = _cpu_ns(child.pid)
        time.sleep(0.1)
        used += _cpu_ns(child.pid) - before
        os.kill(child.pid, signal.SIGCONT)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return {"acted": used > 50e6, "cpu_ms_while_stopped": used / 1e6}


def _cpu_ns(pid: int) -> int:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        except (OSError, ValueError):
            pass
    return total


def threads_during_a_call(case, work: Path) -> dict:
    import torch

    torch.set_num_threads(THREADS)
    before = len(os.listdir("/proc/self/task"))
    model = load(case, work)
    args, _ = inputs(case)
    most, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            most[0] = max(most[0], len(os.listdir("/proc/self/task")) - 1)  # this watcher not counted

    watcher = threading.Thread(target=watch)
    watcher.start()
    for _ in range(20):
        model(*args)
    done.set()
    watcher.join()
    return {"acted": most[0] > before + THREADS, "threads_before": before, "most_during_calls": most[0]}


CONTROLS = {"1": computes, "2": blinds_the_observer, "3": busy_while_stopped, "6": threads_during_a_call,
            "new": computes, "later": computes_in_later_calls}


def main(argv: list[str]) -> int:
    from z36_outside_cases import CASES

    case = next(c for c in CASES if c.name == argv[1])
    work = Path(argv[2])
    work.mkdir(parents=True, exist_ok=True)
    if argv[3:] == ["--construct"]:
        import torch

        torch.set_num_threads(THREADS)
        load(case, work)
        print("constructed", flush=True)
        time.sleep(3600)
        return 0
    print(json.dumps(CONTROLS[case.z36](case, work)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
