"""The driver's dry mode (toolchain side): the build's check of the compile gate's path, many tasks
in one process.

``python driver.py --dry REQUEST.json RESULT.json``; the request lists tasks (``task_id``,
``task_source``, ``specs``, ``dtype``). The toolchain is imported once; each task is recorded in its
own fork (the task's reference with :mod:`dry_probe`'s launches, on its shape-only inputs at its own
sizes), and the probe launches are compiled through the same stages as a candidate's (cached by
TTIR, so a build compiles only a few distinct probes). Per task: the launches, the recording's
error (the task's verification path failed), the compile outcome of the probes, seconds.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from driver_record import _load, run_forked


def dry_record(workdir: Path, request: dict, write) -> None:
    """The fork's job for one task (trusted code only: the task and the probe)."""
    from shape_record import install_no_device, record_launches

    install_no_device(request["soc"])
    try:
        task = _load(workdir / "task.py", "evokernel_task")
        from dry_probe import dry_model

        model_cls = dry_model(task.Model)
    except BaseException as exc:  # noqa: BLE001
        write({"kind": "error", "stage": "importing the task", "text": f"{type(exc).__name__}: {exc}"[:500],
               "launches": 0})
        return
    specs = request["specs"]
    result = record_launches(model_cls, specs["init"], specs["inputs"], soc=request["soc"],
                             dtype=request.get("dtype", "float32"), on_launch=write)
    if result["error"] is not None:
        write({"kind": "error", **result["error"]})
        return
    write({"kind": "done", "launches": result["launched"], "placement": result["placement"]})


def dry_main(request: dict, result_path: Path, compile_all) -> int:
    answers = []
    root = Path(request["workdir"])
    for index, item in enumerate(request["tasks"]):
        workdir = root / f"task{index}"
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "task.py").write_text(item["task_source"])
        start = time.perf_counter()
        lines, died = run_forked(workdir, {**request, **item}, request.get("seccomp", ""), job=dry_record)
        launches = [e for e in lines if e.get("kind") == "launch"]
        errors = [e for e in lines if e.get("kind") == "error"]
        kernels = compile_all(launches, request, workdir) if launches and not errors and not died else []
        answers.append({"task_id": item["task_id"], "died": died, "error": errors[0] if errors else None,
                        "launches": len(launches), "kernels": [{k: v for k, v in kernel.items() if k != "message"} |
                                                               {"message": str(kernel.get("message", ""))[:400]}
                                                               for kernel in kernels],
                        "seconds": round(time.perf_counter() - start, 3)})
    result_path.write_text(json.dumps({"tasks": answers}))
    return 0


