"""A build whose toolchain this machine lacks (issue 39, item 1): never the kernel's fault.

The NPU replay of the issue: a triton-ascend build, its toolchain absent from the campaign's cache
(XDG_CACHE_HOME points at an empty directory; nothing is installed). `evokernel campaign` refuses up
front in one line naming the toolchain and its install command; a campaign that meets the missing
toolchain anyway (it went missing after the start) records each attempt as the machine's outcome,
with no reward and no value update. Real build, real verifier, real lake, scripted LLM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_fixtures import build_tiny
from evokernel.agent.attribution import MACHINE
from evokernel.agent.campaign import run_task
from evokernel.agent.runtime import close_runtime, open_runtime
from evokernel.config import load_settings
from verifier.backends.triton_ascend.toolchain import INSTALL_COMMAND
from verifier.backends.triton_backend import triton_version

ROOT = Path(__file__).resolve().parents[2]
RELU_TRITON = ROOT / "tests" / "fixtures" / "kernels" / "honest_triton_math_ceil_grid.py"  # an honest Triton ReLU
MISSING = f"the triton-ascend toolchain is not installed (run `{INSTALL_COMMAND}`)"


@pytest.fixture(scope="module")
def npu_build(tmp_path_factory):
    return build_tiny("triton-ascend", tmp_path_factory.mktemp("npu-build"))


@pytest.fixture()
def no_toolchain(tmp_path, monkeypatch):
    """A user cache without the triton-ascend toolchain (the campaign's cache of the issue)."""
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(empty))
    return empty


def script(path: Path, task_ids: list[str]) -> Path:
    draft = f"Here is the kernel.\n\n```python\n{RELU_TRITON.read_text()}```\n"
    responses = {t: {"draft": [draft], "distill": ["no lessons"]} for t in task_ids}
    path.write_text(json.dumps({"label": "npu replay (scripted)", "responses": responses}))
    return path


def test_a_campaign_refuses_up_front_naming_the_toolchain_and_its_install_command(npu_build, no_toolchain, tmp_path):
    ids = [t.task_id for t in npu_build.runnable()]
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(no_toolchain),
           "PREFECT_HOME": str(tmp_path / "prefect")}
    done = subprocess.run([sys.executable, "-m", "cli.main", "campaign", "--build", str(npu_build.root), "--lake",
                           str(tmp_path / "lake"), "--llm", f"scripted:{script(tmp_path / 's.json', ids)}",
                           "--budget", "3"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: --build {npu_build.root}: the build is for backend 'triton-ascend', whose compile gate needs a "
        f"toolchain this machine lacks: {MISSING}"]
    assert not (tmp_path / "lake").exists() and not (tmp_path / "prefect").exists()  # nothing started


@pytest.mark.skipif(triton_version() is None, reason="upstream triton (the interpreter) is not installed")
def test_a_toolchain_missing_mid_campaign_makes_every_attempt_the_machines(npu_build, no_toolchain, tmp_path):
    task = npu_build.runnable()[0]
    settings = load_settings(None, build=npu_build.root, lake=tmp_path / "lake", budget=2, method="evokernel",
                             llm=f"scripted:{script(tmp_path / 's.json', [task.task_id])}", latency_rounds=5,
                             correctness_trials=5, verify_threads=2)
    runtime = open_runtime(settings, "npu-replay")  # the CLI's up-front check is behind us: the toolchain went
    try:
        summary = run_task(runtime, task)
        lake = runtime.ctx.lake
        attempts = lake.query("SELECT * FROM attempts ORDER BY iteration").to_pylist()
        updates = lake.query("SELECT count(*) AS n FROM value_updates").to_pylist()[0]["n"]
    finally:
        close_runtime(runtime)
    assert summary.attempts == 2 and not summary.feasible
    assert [a["outcome_owner"] for a in attempts] == [MACHINE, MACHINE]
    for attempt in attempts:
        assert attempt["machine_reason"] == f"compile unavailable here: {MISSING}"
        assert attempt["reward"] is None and attempt["reward_applied"] is None
        assert attempt["feedback"].startswith("NOT JUDGED")
    assert updates == 0
