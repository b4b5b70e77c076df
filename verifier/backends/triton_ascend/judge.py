"""The build's check of the triton-ascend verification path, per task, on this machine
(:mod:`kernelbench_npu.judge`; ``evokernel build --backend triton-ascend`` passes :func:`judge_tasks`).

- **compile**: with the toolchain installed, a *dry recording* of every task at its own sizes in one
  driver process (:mod:`.driver_dry`): the task's reference with a probe ``@triton.jit`` launch per
  input, recorded on the shape-only inputs exactly as a candidate is (meta tensors, nothing
  allocated), the probes compiled by triton-ascend and bishengir-compile. A recording that fails
  is the task's problem (quarantined); a probe that does not compile is the toolchain's, so the gate
  is "unavailable here" with that reason. Without the toolchain: unavailable, naming the machine.
- **correctness**: the interpreter sizes :func:`verifier.backends.small_shapes.interpreter_fits`
  computes for the task (the verifier's own call, whose answers are cached here for the campaign)
  must be the sizes the build linted the reference at; then it runs here when upstream Triton's
  interpreter is installed (or on the NPU where there is one).
- **latency**: only with torch_npu and an NPU.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from kernelbench_npu.judge import GateHere, JudgeRequest, TaskJudgement
from verifier.backends.small_shapes import SmallShapesError, interpreter_fits
from verifier.backends.toolrun import run_tool
from verifier.backends.triton_ascend.toolchain import TritonAscendToolchain, locate
from verifier.settings import default_cache_dir
from verifier.toolchains import ToolchainError

DRY_SECONDS_PER_TASK = 30.0  # a fork, the task on meta and a cached probe compile: well under a second


def _machine(note: str) -> str:
    return note if note.startswith("this machine") else f"this machine: {note}"


def judge_tasks(requests: Sequence[JudgeRequest], progress: Callable[[str], None] | None = None,
                backend=None) -> dict[str, TaskJudgement]:
    from verifier.backends.triton_ascend import TritonAscendBackend

    say = progress or (lambda _msg: None)
    backend = backend or TritonAscendBackend()
    caps = {g.gate: g for g in backend.availability().gates}
    compile_gates, problems = _compile_gates(requests, caps["compile"], say)
    correctness_gates, more = _correctness_gates(requests, caps["correctness"], say)
    latency = caps["latency"]
    judged = {}
    for request in requests:
        gates = (compile_gates[request.task_id], correctness_gates[request.task_id],
                 GateHere("latency", latency.available, latency.note if latency.available else _machine(latency.note)))
        problem = "; ".join(p for p in (problems.get(request.task_id), more.get(request.task_id)) if p) or None
        judged[request.task_id] = TaskJudgement(gates, problem)
    return judged


def _compile_gates(requests, cap, say) -> tuple[dict[str, GateHere], dict[str, str]]:
    if not cap.available:
        gate = GateHere("compile", False, _machine(cap.note))
        return {r.task_id: gate for r in requests}, {}
    try:
        toolchain = locate()
    except ToolchainError as exc:
        gate = GateHere("compile", False, _machine(str(exc)))
        return {r.task_id: gate for r in requests}, {}
    say(f"dry recording of {len(requests)} tasks at their own sizes with {toolchain.describe()} ...")
    answers = dry_run(requests, toolchain)
    gates, problems = {}, {}
    for request in requests:
        answer = answers.get(request.task_id) or {"died": "no answer from the dry recording"}
        gate, problem = _compile_verdict(request, answer, toolchain)
        gates[request.task_id] = gate
        if problem:
            problems[request.task_id] = problem
    return gates, problems


def _compile_verdict(request: JudgeRequest, answer: dict, toolchain: TritonAscendToolchain) -> tuple[GateHere, str]:
    if answer.get("died"):
        return GateHere("compile", False, _machine(f"the dry recording died: {answer['died']}")), ""
    if answer.get("error"):
        error = answer["error"]
        last = (error.get("text") or "").strip().splitlines()[-1:] or [""]
        return (GateHere("compile", False, "the task's dry recording failed"),
                f"the compile gate's dry recording at the task's own sizes failed while {error.get('stage')}: "
                f"{last[0][:200]}")
    failed = [k for k in answer.get("kernels", []) if k.get("status") == "failed"]
    if failed:
        return GateHere("compile", False, _machine(f"the toolchain failed the probe kernel "
                                                    f"({failed[0].get('stage')}): {failed[0].get('message', '')[:200]}")), ""
    held = sum(_tensor_bytes(s) for s in (request.specs or {}).get("inputs", []))
    return GateHere("compile", True, f"{toolchain.describe()}; dry recording at the task's sizes: "
                                     f"{answer.get('launches', 0)} probe launch(es) on shape-only inputs "
                                     f"({held / 2**30:.2f} GiB never allocated), compiled"), ""


def _tensor_bytes(spec: dict) -> int:
    from kernelbench_npu.shape_specs import spec_bytes

    return spec_bytes(spec)


def _dry_env(toolchain: TritonAscendToolchain, workdir: Path) -> dict[str, str]:
    """The driver's environment for the build's dry check (run by the build, no candidate: its own
    HOME, TMPDIR and Triton cache in ``workdir``)."""
    from verifier.backends.triton_ascend.gate import driver_env

    return {**driver_env(toolchain), "HOME": str(workdir), "TMPDIR": str(workdir),
            "TRITON_CACHE_DIR": str(workdir / "triton-cache")}


def dry_run(requests: Sequence[JudgeRequest], toolchain: TritonAscendToolchain) -> dict[str, dict]:
    """The driver's dry mode over every request with specs; answers keyed by task id."""
    from verifier.backends.triton_ascend.gate import DRIVER, SECCOMP

    items = [{"task_id": r.task_id, "task_source": r.source, "specs": r.specs, "dtype": r.dtype}
             for r in requests if r.specs is not None]
    if not items:
        return {}
    workdir = Path(tempfile.mkdtemp(prefix="evokernel-triton-ascend-dry-"))
    try:
        request = {"tasks": items, "soc": toolchain.soc, "full_compile": toolchain.full_compile,
                   "workdir": str(workdir), "cache_dir": str(default_cache_dir() / "triton-ascend" / "kernels"),
                   "seccomp": str(SECCOMP) if SECCOMP.is_file() else "", "record_timeout_s": DRY_SECONDS_PER_TASK,
                   "toolchain_key": json.dumps(toolchain.env.versions, sort_keys=True)}
        (workdir / "request.json").write_text(json.dumps(request))
        result = workdir / "result.json"
        run = run_tool([toolchain.python, DRIVER, "--dry", workdir / "request.json", result], workdir,
                       60.0 + DRY_SECONDS_PER_TASK * len(items), env=_dry_env(toolchain, workdir))
        if not result.is_file():
            tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
            return {i["task_id"]: {"died": f"the driver wrote no result ({tail[:200]})"} for i in items}
        return {a["task_id"]: a for a in json.loads(result.read_text())["tasks"]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _correctness_gates(requests, cap, say) -> tuple[dict[str, GateHere], dict[str, str]]:
    if not cap.available:
        gate = GateHere("correctness", False, _machine(cap.note))
        return {r.task_id: gate for r in requests}, {}
    if cap.note.startswith("NPU"):
        return {r.task_id: GateHere("correctness", True, f"{cap.note}, original sizes") for r in requests}, {}
    say(f"computing the interpreter sizes of {len(requests)} tasks (cached for the verifier) ...")
    try:
        fits = interpreter_fits([r.source for r in requests])
    except SmallShapesError as exc:
        gate = GateHere("correctness", False, _machine(str(exc)))
        return {r.task_id: gate for r in requests}, {}
    gates, problems = {}, {}
    for request, fit in zip(requests, fits):
        if "error" in fit:
            gates[request.task_id] = GateHere("correctness", False, "the task's interpreter sizes failed")
            problems[request.task_id] = f"the correctness sizes cannot be computed: {fit['error']}"
        elif fit["source"] != request.lint_source:
            gates[request.task_id] = GateHere("correctness", False, "sizes differ from the lint sizes")
            problems[request.task_id] = ("the verifier's interpreter sizes differ from the sizes the reference was "
                                         "linted at (rebuild with this verifier)")
        else:
            gates[request.task_id] = GateHere("correctness", True, f"upstream Triton's interpreter at {_shapes(fit)} "
                                                                   f"(the sizes the reference was linted at)")
    return gates, problems


def _shapes(fit: dict) -> str:
    return ", ".join("x".join(map(str, s)) if s is not None else "scalar" for s in fit["input_shapes"])
