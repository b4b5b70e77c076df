"""How soon a campaign gives its first feedback, and what a rerun of a finished campaign costs (issue 39).

Runs the real `evokernel campaign` in a fresh process against a fake OpenAI-compatible server on
127.0.0.1 (tests/llm/fake_server.py, which records the arrival time of every request) and reports:

- seconds from the command's start to the campaign's first LLM request (a fresh PREFECT_HOME, as on a
  user's first run, then the same PREFECT_HOME again);
- seconds from the command's start to its error when the endpoint is unreachable (a closed port),
  with the error's first line;
- a rerun of the finished campaign id: the LLM requests the server saw and the rows of ``llm_calls``
  before and after (both must not change).

The fake server answers every request with "ok": no kernel in a draft (the attempt fails as
"generation") and no lesson in a distillation (the case of issue 39's item 2).
Targets: first request and unreachable endpoint within 10 s each; 0 requests on the rerun.

Run: .venv/bin/python -m benchmarks.first_feedback [--build DIR --task ID] [--evokernel PATH] [--json out.json]
(without --build, a one-task cpu build is made first in a temporary directory, its task KB-L1/1_ReLU;
``--evokernel`` runs another checkout's command, e.g. /work/main/.venv/bin/evokernel, for a before/after).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "llm"))  # the fake OpenAI/Anthropic server of the LLM tests

from fake_server import API_KEY, FakeLLMServer  # noqa: E402


def _command(evokernel: str | None) -> list[str]:
    return [evokernel] if evokernel else [str(Path(sys.executable).parent / "evokernel")]


def _env(prefect_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVOKERNEL_", "OPENAI_", "ANTHROPIC_", "PREFECT_"))}
    env.update(PREFECT_HOME=str(prefect_home), OPENAI_COMPATIBLE_API_KEY=API_KEY)
    env.pop("PYTHONPATH", None)  # another checkout's command imports its own code
    return env


def run_campaign(command: list[str], args: list[str], prefect_home: Path, cwd: Path) -> tuple[float, float, object]:
    """(epoch start, seconds to exit, the finished process)."""
    started_epoch, started = time.time(), time.perf_counter()
    done = subprocess.run(command + ["campaign", *args], capture_output=True, text=True, cwd=cwd,
                          env=_env(prefect_home), timeout=900)
    return started_epoch, time.perf_counter() - started, done


def _first_line(done) -> str:
    lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or [""])[0]


def llm_call_rows(command: list[str], lake: Path, cwd: Path) -> int | None:
    done = subprocess.run(command + ["lake", "query", "--lake", str(lake), "--format", "json",
                                     "SELECT count(*) AS n FROM llm_calls"], capture_output=True, text=True, cwd=cwd)
    try:
        return int(json.loads(done.stdout.strip().splitlines()[-1])["n"])
    except (ValueError, IndexError, KeyError):
        return None


def first_request(command: list[str], build: str, task: str, scratch: Path, prefect_home: Path, name: str) -> dict:
    with FakeLLMServer() as server:
        lake = scratch / f"lake-{name}"
        args = ["--build", build, "--lake", str(lake), "--llm", f"openai-compatible:m@{server.url}/v1",
                "--budget", "1", "--tasks", task, "--campaign-id", name]
        start, wall, done = run_campaign(command, args, prefect_home, scratch)
        first = server.request_times[0] - start if server.request_times else None
        return {"exit": done.returncode, "first_request_s": None if first is None else round(first, 2),
                "exit_s": round(wall, 2), "requests": len(server.requests), "first_line": _first_line(done),
                "lake": str(lake), "args": args, "url": server.url}


def rerun(command: list[str], run: dict, scratch: Path, prefect_home: Path) -> dict:
    lake = Path(run["lake"])
    before = llm_call_rows(command, lake, scratch)
    with FakeLLMServer() as server:  # a new port: the same campaign id, the same model name
        args = [a.replace(run["url"], server.url) for a in run["args"]]
        _, wall, done = run_campaign(command, args, prefect_home, scratch)
        requests = len(server.requests)
    return {"exit": done.returncode, "exit_s": round(wall, 2), "requests": requests,
            "llm_calls_before": before, "llm_calls_after": llm_call_rows(command, lake, scratch),
            "first_line": _first_line(done)}


def unreachable(command: list[str], build: str, task: str, scratch: Path, prefect_home: Path) -> dict:
    args = ["--build", build, "--lake", str(scratch / "lake-unreachable"), "--llm", "openai-compatible:m@http://127.0.0.1:9/v1",
            "--budget", "1", "--tasks", task]
    _, wall, done = run_campaign(command, args, prefect_home, scratch)
    return {"exit": done.returncode, "exit_s": round(wall, 2), "first_line": _first_line(done)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=None, help="a cpu build (evokernel build --backend cpu)")
    parser.add_argument("--task", default=None, help="a task of --build (default: L1/001_relu, or the made build's)")
    parser.add_argument("--evokernel", default=None, help="the evokernel command to time (default: this checkout's)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    command = _command(args.evokernel)
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} cores; command {' '.join(command)}")
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="first-feedback-") as tmp:
        scratch = Path(tmp)
        if args.build is None:
            from benchmarks.bad_inputs import make_build

            args.build, args.task = str(make_build(scratch)), "KB-L1/1_ReLU"
        args.task = args.task or "L1/001_relu"
        home = scratch / "prefect"
        rows["unreachable endpoint (fresh PREFECT_HOME)"] = unreachable(command, args.build, args.task, scratch, home)
        rows["first request (fresh PREFECT_HOME)"] = first = first_request(command, args.build, args.task, scratch,
                                                                            scratch / "prefect-2", "ff-fresh")
        rows["first request (PREFECT_HOME used before)"] = first_request(command, args.build, args.task, scratch,
                                                                          scratch / "prefect-2", "ff-warm")
        rows["unreachable endpoint (PREFECT_HOME used before)"] = unreachable(command, args.build, args.task, scratch,
                                                                             scratch / "prefect-2")
        rows["rerun of the finished campaign"] = rerun(command, first, scratch, scratch / "prefect-2")
    for name, row in rows.items():
        shown = {k: v for k, v in row.items() if k not in ("lake", "args", "url")}
        print(f"{name:48s} {json.dumps(shown)}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
