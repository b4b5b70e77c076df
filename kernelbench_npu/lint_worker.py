"""The lint worker process: imports torch once, then adapts or lints many tasks sequentially.

Started by :mod:`kernelbench_npu.lint` as ``python -m kernelbench_npu.lint_worker FD THREADS MEM``.
Requests arrive as JSON lines on stdin; each answer is one JSON line on file descriptor FD (never
stdout, which problem code may print to). The first line on FD is ``{"ready": true}``. An address-space
limit turns a runaway allocation into a Python error (a quarantine reason) instead of an OOM kill.
"""

from __future__ import annotations

import json
import os
import resource
import sys


def _limit_memory(extra_bytes: int) -> None:
    if extra_bytes <= 0:
        return
    with open("/proc/self/statm") as fh:
        current = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = current + extra_bytes
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        pass


def _adapt(request: dict) -> dict:
    """Check the file on the meta device, then fit it to the size profile (or just cost it)."""
    from dataclasses import asdict
    from pathlib import Path

    from kernelbench_npu.loader import ProblemError, check_runtime
    from kernelbench_npu.sizing import CostError, estimate_cost, fit_to_target, size_constants

    source, path, dtype = request["source"], request["path"], request["dtype"]
    try:
        check_runtime(Path(path), source)
    except ProblemError as exc:
        return {"load_error": str(exc)}
    try:
        if request["target_ms"] is None:
            cost, constants, note = estimate_cost(source, dtype, path), size_constants(source), "original sizes"
        else:
            fitted = fit_to_target(source, request["target_ms"], request["keep_below_ms"], dtype, path)
            cost, constants, note, source = fitted.cost, fitted.constants, fitted.note, fitted.source
    except CostError as exc:
        return {"cost_error": str(exc)}
    return {"source": source, "constants": constants, "note": note, "cost": asdict(cost)}


def _answer(key: str, request: dict) -> dict:
    from kernelbench_npu.lint_checks import lint_source

    try:
        if request.get("kind") == "adapt":
            return {"key": key, **_adapt(request)}
        outcome = lint_source(request["source"], request["dtype"], request["time_budget_ms"], request["path"])
        return {"key": key, **outcome.as_dict()}
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

    _limit_memory(memory_bytes)
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        out.write(json.dumps(_answer(request["key"], request)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
