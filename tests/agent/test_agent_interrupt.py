"""How a real `evokernel campaign` process ends when it does not finish (scripted provider, CPU
backend, the bundled ReLU problem built for real):

- Ctrl-C (SIGINT to its process group, as a terminal sends it) while a verification runs: the process
  exits within 10 s with 130, kills that verification, writes no half step, records the campaign
  `interrupted` and prints one line with the command that resumes it; that command then completes
  the campaign with every iteration exactly once. While it ran, a second process on its campaign id
  was refused with one line naming it.
- An LLM endpoint that cannot be reached: refused before anything starts, one line naming its URL.
- A fatal LLM error (a refused key): exit 2, one error line with the resume command, the campaign
  recorded `failed` (not left `running`), no traceback.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_fixtures import write_script

from memory_lake import Lake

ROOT = Path(__file__).resolve().parents[2]
BUNDLED_RELU = ROOT / "kernelbench_npu" / "problems" / "level1" / "001_relu.py"
STOP_LIMIT_S = 10.0


@pytest.fixture(scope="module")
def relu_build(tmp_path_factory):
    """The bundled ReLU problem at a smaller width (1M elements: its 8M took 25-40 s a verification under the
    suite's load, and nothing here is about its size), built for the cpu backend."""
    from kernelbench_npu.build import build_benchmark
    from kernelbench_npu.spec import load_build

    root = tmp_path_factory.mktemp("relu-build")
    (root / "src" / "level1").mkdir(parents=True)
    source = BUNDLED_RELU.read_text()
    assert "dim = 65536\n" in source
    (root / "src" / "level1" / BUNDLED_RELU.name).write_text(source.replace("dim = 65536\n", "dim = 8192\n"))
    summary = build_benchmark("cpu", sources=[root / "src"], levels=(1,), out=root / "build", include_bundled=False)
    assert summary.ok == 1, summary
    return load_build(root / "build")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "PYTHONPATH": str(ROOT)}


def _cli(words: list[str]) -> list[str]:
    """An `evokernel ...` command line as this interpreter runs it."""
    assert words[0] == "evokernel"
    return [sys.executable, "-m", "cli.main", *words[1:]]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if stat:
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry.name))
    found, todo = set(), list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        found.add(child)
        todo += children.get(child, ())
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _attempts(lake: Path, campaign_id: str) -> list[int]:
    if not Lake.exists(lake):
        return []
    with Lake.open(lake) as reader:
        return reader.query("SELECT iteration FROM attempts WHERE campaign_id = ? ORDER BY iteration",
                            [campaign_id]).column("iteration").to_pylist()


def _verifying(pid: int) -> set[int]:
    """The campaign's processes that are not its Prefect server: a verification in flight."""
    return {p for p in _descendants(pid) if "uvicorn" not in _cmdline(p)}


def test_ctrl_c_stops_within_10_s_and_the_printed_command_resumes_exactly(tmp_path, relu_build, prefect_home):
    task = relu_build.runnable()[0].task_id
    script = write_script(tmp_path / "s.json", [task], draft=["relu_draft_hack", "relu_draft_scalar"],
                          refine=["relu_refine_omp", "relu_refine_leaky_bug"])
    (tmp_path / "fast.toml").write_text("latency_rounds = 5\n")
    lake = tmp_path / "lake"
    words = ["evokernel", "campaign", "--build", str(relu_build.root), "--lake", str(lake), "--llm",
             f"scripted:{script}", "--budget", "4", "--campaign-id", "ctrl-c", "--config", str(tmp_path / "fast.toml")]
    out, err = open(tmp_path / "out.txt", "w"), open(tmp_path / "err.txt", "w")
    proc = subprocess.Popen(_cli(words), env=_env(tmp_path), cwd=tmp_path, start_new_session=True, stdout=out, stderr=err)
    deadline = time.monotonic() + 600
    while (not _attempts(lake, "ctrl-c") or not _verifying(proc.pid)) and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, (tmp_path / "err.txt").read_text()[-3000:]

    # held still while a second start is refused, so that the Ctrl-C below finds it mid-campaign however
    # fast its steps are (a verification takes a few seconds; the second start's imports take as long)
    os.killpg(proc.pid, signal.SIGSTOP)
    try:
        second = subprocess.run(_cli(words), env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True,
                                timeout=300)
    finally:
        os.killpg(proc.pid, signal.SIGCONT)
    assert second.returncode == 2
    assert second.stderr.strip() == second.stderr.strip().splitlines()[0]
    assert second.stderr.startswith(f"error: campaign ctrl-c is running on {socket.gethostname()} pid {proc.pid} ")

    verifying = _verifying(proc.pid)
    server = [p for p in _descendants(proc.pid) if "uvicorn" in _cmdline(p)]
    committed = _attempts(lake, "ctrl-c")
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C goes to the whole foreground group
    code = proc.wait(timeout=60)
    took = time.monotonic() - sent
    print(f"SIGINT to exit: {took:.2f} s")  # shown with -rP; the README and closing notes quote it
    out.close(), err.close()
    stderr = (tmp_path / "err.txt").read_text()
    assert took < STOP_LIMIT_S, f"{took:.1f} s from SIGINT to exit"
    assert code == 130, stderr[-3000:]
    assert "Traceback" not in stderr + (tmp_path / "out.txt").read_text()
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("interrupted: campaign ctrl-c stopped; resume with: evokernel campaign "), last
    time.sleep(2)
    assert not [p for p in verifying | set(server) if _alive(p)], "processes left behind"

    with Lake.open(lake) as reader:
        status = reader.campaign_state("ctrl-c")
        assert (status.status, status.status_reason) == ("interrupted", "Ctrl-C")
        done = _attempts(lake, "ctrl-c")
        assert done == list(range(len(done))) and len(committed) <= len(done) < 4  # no half step

    resume = shlex.split(last.split("resume with: ", 1)[1])
    finished = subprocess.run(_cli(resume), env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True,
                              timeout=1800)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert _attempts(lake, "ctrl-c") == [0, 1, 2, 3]
    with Lake.open(lake) as reader:
        statuses = reader.query("SELECT status FROM campaigns WHERE campaign_id = 'ctrl-c' ORDER BY recorded_at")
        assert statuses.column("status").to_pylist() == ["running", "interrupted", "running", "finished"]
        for query in ("SELECT attempt_id, rank FROM retrievals", "SELECT attempt_id, item_id, stage FROM value_updates",
                      "SELECT source_attempt_id FROM items WHERE kind = 'trace'"):
            assert not reader.query(f"SELECT *, count(*) AS n FROM ({query}) GROUP BY ALL HAVING count(*) > 1").num_rows
        assert reader.query("SELECT count(*) AS n FROM items WHERE kind = 'trace'").column("n")[0].as_py() == 4


def test_an_unreachable_llm_endpoint_is_refused_before_anything_starts(tmp_path, relu_build):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lake = tmp_path / "lake"
    words = ["evokernel", "campaign", "--build", str(relu_build.root), "--lake", str(lake), "--llm",
             f"openai-compatible:m@http://127.0.0.1:{port}/v1", "--budget", "2", "--campaign-id", "no-llm"]
    done = subprocess.run(_cli(words), env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [
        f"error: --llm openai-compatible:m@http://127.0.0.1:{port}/v1: connection failed to http://127.0.0.1:{port}/v1: "
        "[Errno 111] Connection refused; nothing was started"]
    assert not lake.exists() and not (tmp_path / "prefect").exists()  # no lake, no Prefect server


def test_a_fatal_llm_error_fails_the_campaign_in_one_line(tmp_path, relu_build, prefect_home):
    """The endpoint answers (the check before the start passes) but refuses the first generation (HTTP 400,
    fatal): it stops the campaign, recorded `failed`, with one error line and the command that resumes it."""
    sys.path.insert(0, str(ROOT / "tests" / "llm"))
    from fake_server import API_KEY, Answer, FakeLLMServer

    (tmp_path / "fast.toml").write_text("llm_max_retries = 1\n")
    lake = tmp_path / "lake"
    with FakeLLMServer() as server:
        spec = f"openai-compatible:m@{server.url}/v1"
        words = ["evokernel", "campaign", "--build", str(relu_build.root), "--lake", str(lake), "--llm", spec,
                 "--budget", "2", "--config", str(tmp_path / "fast.toml"), "--campaign-id", "no-llm"]
        server.push(Answer(status=400))
        env = {**_env(tmp_path), "OPENAI_COMPATIBLE_API_KEY": API_KEY}
        done = subprocess.run(_cli(words), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: campaign no-llm failed: {spec}: "), errors
    assert "bad request (HTTP 400)" in errors[0]
    assert errors[0].endswith(f"resume with: {shlex.join(words)}")
    assert "Traceback" not in done.stderr + done.stdout and "NoneType: None" not in done.stderr
    with Lake.open(lake) as reader:
        state = reader.campaign_state("no-llm")
        assert state.status == "failed" and state.status_reason.startswith(spec)
        assert not _attempts(lake, "no-llm")
