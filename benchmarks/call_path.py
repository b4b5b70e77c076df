"""Call path of one campaign: the project's frames from the `evokernel campaign` command to the first
LLM call and to the first lake write, with the files they cross and the Prefect/core crossings.

Runs a one-task, one-iteration campaign of the bundled CPU build with the scripted provider (real
flow, real verifier, real lake) with the LLM's ``complete`` and the lake's ``append`` wrapped to
record the stack of every live thread on their first call. A Prefect task runner executes tasks in
worker threads, so the path is the command's thread (CLI -> flow -> submit) followed by the worker's
(task engine -> ... -> call). Library frames are not counted, only their crossings.

Run: .venv/bin/python -m benchmarks.call_path
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cli", "flows", "tasks", "evokernel", "verifier", "kernelbench_npu", "memory_lake", "reports")
PREFECT_SIDE = {"flows", "tasks", "prefect"}


def _layer(filename: str) -> str | None:
    path = Path(filename).resolve()
    if "site-packages" in path.parts:
        return "prefect" if "prefect" in path.parts else None
    try:
        rel = path.relative_to(ROOT)
    except ValueError:
        return None
    return rel.parts[0] if rel.parts and rel.parts[0] in PACKAGES else None


def _path_of(frames: list[traceback.FrameSummary]) -> list[tuple[str, str, str]]:
    """(layer, file, function) of project frames, plus one ('prefect', ...) per run of Prefect frames."""
    out: list[tuple[str, str, str]] = []
    for frame in frames:
        layer = _layer(frame.filename)
        if layer is None or (layer == "prefect" and out and out[-1][0] == "prefect"):
            continue
        rel = frame.filename if layer == "prefect" else str(Path(frame.filename).resolve().relative_to(ROOT))
        out.append((layer, "prefect" if layer == "prefect" else rel, frame.name))
    return out


def _record(label: str, sink: dict, target: tuple[str, str, str]) -> None:
    if label in sink:
        return
    here = threading.get_ident()
    stacks = sys._current_frames()
    main = traceback.extract_stack(stacks[threading.main_thread().ident])
    own = traceback.extract_stack(stacks[here])
    path = (_path_of(main)[:-1] if here != threading.main_thread().ident else []) + _path_of(own)
    sink[label] = path + [target]


def _summary(label: str, path: list[tuple[str, str, str]]) -> str:
    project = [p for p in path if p[0] != "prefect"]
    files = list(dict.fromkeys(p[1] for p in project))
    sides = ["prefect" if p[0] in PREFECT_SIDE else "core" for p in path if p[0] != "cli"]
    crossings = sum(1 for a, b in zip(sides, sides[1:]) if a != b)
    chain = " -> ".join("[prefect]" if p[0] == "prefect" else f"{'/'.join(p[1].split('/')[-2:]).removesuffix('.py')}.{p[2]}"
                        for p in path)
    return (f"{label}: {len(project)} project calls in {len(files)} files, {crossings} core<->Prefect crossings\n"
            f"  {chain}")


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="evokernel-callpath-"))
    os.environ.setdefault("PREFECT_HOME", str(work / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from evokernel.llm.scripted import ScriptedLLM
    from kernelbench_npu.build import build_benchmark
    from memory_lake import Lake

    sink: dict = {}
    complete, append = ScriptedLLM.complete, Lake.append

    def traced_complete(self, request):
        _record("first LLM call", sink, ("evokernel", "evokernel/llm/scripted.py", "complete"))
        return complete(self, request)

    def traced_append(self, table, rows, *args, **kwargs):
        if table == "attempts":
            _record("first attempt written to the lake", sink, ("memory_lake", "memory_lake/lake.py", "append"))
        return append(self, table, rows, *args, **kwargs)

    ScriptedLLM.complete, Lake.append = traced_complete, traced_append
    build_benchmark("cpu", out=work / "build", progress=None)
    from cli.main import app

    args = ["campaign", "--build", str(work / "build"), "--lake", str(work / "lake"), "--llm", "scripted:demo",
            "--budget", "1", "--tasks", "L1/001_relu", "--campaign-id", "call-path"]
    try:
        app(args, standalone_mode=False)
    finally:
        ScriptedLLM.complete, Lake.append = complete, append
    for label, path in sink.items():
        print(_summary(label, path))
    return 0 if len(sink) == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
