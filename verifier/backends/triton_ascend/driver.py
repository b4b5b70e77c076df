"""The triton-ascend compile driver: a script run by the toolchain environment's python.

``python driver.py REQUEST.json RESULT.json`` (the request is written by :mod:`gate`; ``--dry`` runs
the build's check of this path instead, :mod:`driver_dry`). Steps:

0. The task's inputs are described by shape on the meta device (``kernelbench_npu.shape_specs``,
   from the main environment; a caller that already has them passes ``specs`` instead), after one
   warm-up meta op so the forks below do not each pay torch._dynamo's import.

1. A forked, seccomp-filtered child records the candidate's launches on shape-only stand-ins of
   the task's inputs (the request's ``specs``; nothing the size of the task is allocated) and runs
   Triton's front end to TTIR (:mod:`driver_record`, :mod:`shape_record`); this process never
   imports candidate code.
2. For every distinct TTIR (cached by its hash, the launch options, the SoC and the toolchain
   versions): triton-ascend's own ``ttadapter`` stage (``triton-adapter-opt``: TTIR -> linalg with
   HIVM annotations) and its own ``npubin`` stage for A2/A3 (``bishengir-compile`` with the flags
   triton-ascend passes: multi-buffer, sub-block binding, HFusion + HIVM compile). Only its
   device query is replaced, by the configured SoC (see :func:`prepare_triton`).
3. Without CANN the hivmc stand-in ends the pipeline; reaching it is a pass at HIVM level, and the
   HIVM module it was handed gives the planned Unified Buffer / L1 footprint. With CANN's hivmc
   the stage completes to an NPU binary.

The result (per kernel specialisation: status, stage, raw message, footprint, seconds, cached) is
written as JSON; :mod:`diagnostics` turns messages into feedback in the main environment. Runs
with the standard library, triton-ascend and torch; only step 0 imports the project
(``kernelbench_npu.shape_specs``), through the main environment's site-packages.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from driver_record import run_forked  # noqa: E402  (a sibling module, found through sys.path[0])

HIVMC_REACHED = "External hivmc run fails"
_UB_ALLOC = re.compile(r"hivm\.hir\.pointer_cast\(%c(\d+)(?:_i64)?[^)]*\)\s*:\s*memref<([^,>]+)[^>]*"
                       r"#hivm\.address_space<(ub|cbuf)>>")
_BYTES = {"f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2, "i8": 1, "i1": 1, "f64": 8, "i64": 8, "ui8": 1}


class FakeNpuUtils:
    """Stands in for triton-ascend's NPUUtils (which builds a CANN extension to ask the device)."""

    soc = "Ascend910B2"

    def get_arch(self) -> str:
        return self.soc


def prepare_triton(soc: str):
    """Import triton-ascend and point its device query at the target SoC.

    The npubin stage asks ``NPUUtils().get_arch()`` only for bishengir's ``--target``; the real
    NPUUtils compiles a CANN extension and asks the device, which a compile-only machine (with or
    without CANN) does not have. The SoC comes from the user's configuration instead."""
    import triton  # noqa: F401
    from triton.backends import backends

    ascend = backends["ascend"].compiler
    FakeNpuUtils.soc = soc
    ascend.add_stages.__globals__["NPUUtils"] = FakeNpuUtils
    return ascend


def footprint(hivm_text: str) -> dict:
    """Planned bytes per on-chip buffer (ub, cbuf) from the HIVM module's pointer casts."""
    used: dict[str, int] = {}
    for offset, shape, space in _UB_ALLOC.findall(hivm_text):
        *dims, element = shape.split("x")
        size = _BYTES.get(element.strip(), 4)
        for d in dims:
            size *= int(d) if d.isdigit() else 0
        used[space] = max(used.get(space, 0), int(offset) + size)
    return used


def compile_ttir(entry: dict, ascend, soc: str, full_compile: bool, workdir: Path) -> dict:
    """ttadapter + npubin for one recorded launch; the raw outcome."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget

    target = GPUTarget("npu", soc, 0)
    backend = ascend(target)
    options = backend.parse_options(dict(entry["options"]))
    digest = hashlib.sha256(entry["ttir"].encode()).hexdigest()[:16]
    path = workdir / f"{entry['kernel']}-{digest}.ttir"
    path.write_text(entry["ttir"])
    dump = workdir / f"{entry['kernel']}-{digest}.hivm.mlir"
    os.environ["EVOKERNEL_HIVM_DUMP"] = str(dump)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = ir.parse_mlir_module(str(path), context)
    module.context = context
    stages: dict = {}
    backend.add_stages(stages, options)
    metadata = {"hash": digest, "target": target, **options.__dict__}
    stage = "ttadapter"
    try:
        linalg = stages["ttadapter"](module, metadata)
        stage = "bishengir"
        binary = stages["npubin"](linalg, metadata)
    except subprocess.CalledProcessError as exc:
        text = _decode(exc.stderr) + "\n" + _decode(exc.stdout)
        reached = HIVMC_REACHED in text and dump.is_file() and not full_compile
        return {"status": "hivm" if reached and not _other_errors(text) else "failed", "stage": stage,
                "message": text.strip(), "footprint": footprint(dump.read_text()) if dump.is_file() else {}}
    except Exception as exc:  # a stage's own Python raised (missing tool, bad metadata)
        return {"status": "failed", "stage": stage, "message": f"{type(exc).__name__}: {exc}"}
    return {"status": "binary", "stage": "npubin", "message": f"{len(binary)} bytes", "footprint": {}}


def _decode(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _other_errors(text: str) -> bool:
    return any("error:" in line.lower() and HIVMC_REACHED not in line for line in text.splitlines())


def compile_all(entries: list[dict], request: dict, workdir: Path) -> list[dict]:
    ascend = prepare_triton(request["soc"])
    cache = Path(request["cache_dir"]) if request.get("cache_dir") else None
    results = []
    for entry in entries:
        base = {k: entry.get(k) for k in ("kernel", "spec", "grid", "programs", "line", "group")}
        if entry.get("front_end_error") or entry.get("launch_error"):
            message = entry.get("front_end_error") or entry["launch_error"]
            stage = "front end" if entry.get("front_end_error") else "launch"
            results.append({**base, "status": "failed", "stage": stage, "message": message, "seconds": 0.0})
            continue
        key = hashlib.sha256(json.dumps([entry["ttir"], entry["options"], request["soc"], request["full_compile"],
                                         request.get("toolchain_key", "")], sort_keys=True).encode()).hexdigest()
        hit = cache / f"{key}.json" if cache else None
        if hit is not None and hit.is_file():
            results.append({**base, **json.loads(hit.read_text()), "cached": True})
            continue
        start = time.perf_counter()
        outcome = compile_ttir(entry, ascend, request["soc"], bool(request["full_compile"]), workdir)
        outcome["seconds"] = round(time.perf_counter() - start, 3)
        if hit is not None:
            hit.parent.mkdir(parents=True, exist_ok=True)
            hit.write_text(json.dumps(outcome))
        results.append({**base, **outcome, "cached": False})
    return results


def warm_up() -> None:
    """Import torch and make one meta-device op before forking: the first meta dispatch imports
    torch._dynamo (seconds; 10 s on a loaded 2-core host), which every fork would pay again."""
    import torch

    torch.empty(1, device="meta") + 1


def task_input_specs(request: dict) -> str:
    """Put the task's shape-only input specs into the request (``kernelbench_npu.shape_specs``, found
    through the main environment's site-packages); "" or why not."""
    from kernelbench_npu.shape_specs import task_specs

    try:
        request["specs"] = task_specs(request["task_source"], request.get("dtype", "float32"), path="task.py").as_dict()
    except Exception as exc:  # noqa: BLE001 - a task the build would have quarantined
        return f"{type(exc).__name__}: {exc}"[:500]
    return ""


def main(argv: list[str]) -> int:
    if argv[1] == "--dry":  # the build's check of the path, many tasks (driver_dry)
        from driver_dry import dry_main

        warm_up()
        prepare_triton(json.loads(Path(argv[2]).read_text())["soc"])
        return dry_main(json.loads(Path(argv[2]).read_text()), Path(argv[3]), compile_all)
    request = json.loads(Path(argv[1]).read_text())
    workdir = Path(request["workdir"])
    (workdir / "candidate.py").write_text(request["candidate_source"])
    warm_up()
    prepare_triton(request["soc"])
    if "specs" not in request:  # shapes, strides, dtypes and scalars, made on the meta device: nothing allocated
        problem = task_input_specs(request)
        if problem:
            Path(argv[2]).write_text(json.dumps({"record_seconds": 0.0, "died": "", "launches": 0, "kernels": [],
                                                 "placement": None, "error": {"stage": "describing the task's inputs "
                                                 "by shape", "text": problem, "launches": 0}}))
            return 0
    start = time.perf_counter()
    lines, died = run_forked(workdir, request, request.get("seccomp", ""))
    launches = [e for e in lines if e.get("kind") == "launch"]
    errors = [e for e in lines if e.get("kind") == "error"]
    done = next((e for e in lines if e.get("kind") == "done"), {})
    result = {"record_seconds": round(time.perf_counter() - start, 3), "died": died,
              "error": errors[0] if errors else None, "launches": len(launches),
              "placement": done.get("placement"),
              "kernels": compile_all(launches, request, workdir)}
    Path(argv[2]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
