"""The lint worker process: imports torch once, then adapts or lints many tasks sequentially.

Started by :mod:`kernelbench_npu.lint` as ``python -m kernelbench_npu.lint_worker FD THREADS MEM`` (MEM: the
memory limit of a request that names none).
Requests arrive as JSON lines on stdin; each answer is one JSON line on file descriptor FD (never
stdout, which problem code may print to). The first line on FD is ``{"ready": true}``. An address-space
limit turns a runaway allocation into a Python error (a quarantine reason) instead of an OOM kill.
"""

from __future__ import annotations

import json
import os
import resource
import sys


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _limit_memory(base: int, extra_bytes: int) -> None:
    """The address space a request may use: the worker's own once ready (``base``) plus ``extra_bytes``
    (the soft limit, set again for each request: a worker serves a build's sizing and then its lint)."""
    limit = base + extra_bytes if extra_bytes > 0 else resource.RLIM_INFINITY
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    except (ValueError, OSError):
        pass


def _adapt(request: dict) -> dict:
    """Check the file on the meta device, then size it: the task's sizes and the sizes to lint at."""
    from pathlib import Path

    from kernelbench_npu.cost import CostError, estimate_cost
    from kernelbench_npu.loader import ProblemError, check_runtime
    from kernelbench_npu.sizing import fit_profile, original_fit
    from kernelbench_npu.variants import PROFILES

    source, path = request["source"], request["path"]
    try:
        check_runtime(Path(path), source)
    except ProblemError as exc:
        return {"load_error": str(exc)}
    try:
        lint = fit_profile(source, PROFILES[request.get("lint_profile", "cpu-2core")], path)
        task = lint if request["shrink"] else original_fit(source, estimate_cost(source, "float32", path))
    except CostError as exc:
        return {"cost_error": str(exc)}
    answer = {"task": task.as_dict(), "lint": lint.as_dict()}
    if request.get("specs"):  # the NPU variants' compile gate records launches on these, never on values
        from kernelbench_npu.shape_specs import SpecError, task_specs

        try:
            answer["specs"] = task_specs(task.source, "float32", path=path).as_dict()
        except SpecError as exc:
            answer["spec_error"] = str(exc)
    return answer


def _lint(request: dict):
    """Lint in the task's dtype; where this CPU has no kernel for it (fp16 avg_pool3d...), lint the
    size- and dtype-independent properties in float32 and give the task its own dtype's tolerance."""
    from dataclasses import replace

    from kernelbench_npu.lint_checks import lint_source
    from kernelbench_npu.tolerance import tolerances

    try:
        return lint_source(request["source"], request["dtype"], request["path"])
    except NotImplementedError as exc:
        if request["dtype"] == "float32":
            raise
        wide = lint_source(request["source"], "float32", request["path"])
        atol, rtol = tolerances(request["dtype"], wide.output_scale if wide.output_scale is not None else 1.0)
        note = f"linted in float32: this CPU has no {request['dtype']} kernel ({str(exc).splitlines()[0][:120]})"
        return replace(wide, atol=atol, rtol=rtol, notes="; ".join(n for n in (note, wide.notes) if n))


def _answer(key: str, request: dict) -> dict:
    try:
        if request.get("kind") == "adapt":
            return {"key": key, **_adapt(request)}
        return {"key": key, **_lint(request).as_dict()}
    except MemoryError:
        return {"key": key, "error": "out of memory within the lint memory limit"}
    except Exception as exc:  # noqa: BLE001 - any failure of the reference is a quarantine reason
        text = str(exc).strip().splitlines()
        return {"key": key, "error": f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__}


def main(argv: list[str]) -> int:
    fd, threads, memory_bytes = int(argv[1]), int(argv[2]), int(argv[3])
    out = os.fdopen(fd, "w", buffering=1)
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    import kernelbench_npu.lint_checks  # noqa: F401 - import cost paid before "ready"
    from kernelbench_npu.cost import warm_up

    warm_up()

    base = _address_space()
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        _limit_memory(base, int(request.get("memory_bytes", memory_bytes)))
        out.write(json.dumps(_answer(request["key"], request)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
