"""The rules of a campaign's stop (evokernel.agent.interrupt) with real threads and processes, and
the resume command the CLI prints (cli/campaign_interrupt.py)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cli.campaign_interrupt import resume_command
from evokernel.agent import interrupt


@pytest.fixture(autouse=True)
def fresh():
    interrupt.reset()
    yield
    interrupt.reset()


def test_no_step_commits_after_a_stop_and_a_commit_in_progress_is_waited_for():
    entered, release = threading.Event(), threading.Event()

    def commit():
        with interrupt.committing():
            entered.set()
            release.wait(10)

    writer = threading.Thread(target=commit)
    writer.start()
    entered.wait(10)
    assert interrupt.request_stop(interrupt.INTERRUPTED, "Ctrl-C")
    assert not interrupt.request_stop(interrupt.FAILED, "later")  # the first stop wins
    assert not interrupt.wait_for_commits(0.2)  # still writing
    release.set()
    assert interrupt.wait_for_commits(10)
    writer.join()
    with pytest.raises(interrupt.CampaignStopped, match="Ctrl-C"):
        with interrupt.committing():
            pass
    with pytest.raises(interrupt.CampaignStopped):
        interrupt.pause(30)  # a retry's wait ends at once


def test_the_status_is_recorded_once_and_a_second_finisher_waits_for_the_first():
    calls: list[str] = []

    def slow(stop: interrupt.Stop) -> None:
        time.sleep(0.5)
        calls.append(stop.status)

    interrupt.on_finish(slow)
    assert interrupt.finish() is None  # no stop: nothing recorded
    interrupt.request_stop(interrupt.FAILED, "boom")
    first = threading.Thread(target=interrupt.finish)
    first.start()
    time.sleep(0.1)
    started = time.monotonic()
    assert interrupt.finish() == interrupt.Stop(interrupt.FAILED, "boom")
    assert time.monotonic() - started > 0.2 and calls == ["failed"]  # waited, did not record again
    first.join()
    assert calls == ["failed"]


def test_a_stop_requested_before_the_flow_begins_survives_begin():
    interrupt.request_stop(interrupt.INTERRUPTED, "Ctrl-C")
    interrupt.begin()
    assert interrupt.stopping() == interrupt.Stop(interrupt.INTERRUPTED, "Ctrl-C")
    interrupt.finish()
    interrupt.begin()  # a finished stop belongs to the run before
    assert interrupt.stopping() is None


KILL_SCENARIO = """
import json, subprocess, sys, time
from pathlib import Path
from evokernel.agent import interrupt
sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
parent = [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen(%r); time.sleep(60)" % sleep]
victim, spared = subprocess.Popen(parent), subprocess.Popen(sleep)
time.sleep(1.5)
grandchildren = [int(p) for p in Path(f"/proc/{victim.pid}/task/{victim.pid}/children").read_text().split()]
interrupt.spare(spared.pid)
killed = interrupt.kill_verifications()
print(json.dumps({"killed": killed, "victim": victim.wait(10), "spared_alive": spared.poll() is None,
                  "grandchildren": grandchildren}))
spared.kill()
"""


def test_kill_verifications_kills_what_this_process_started_except_the_spared():
    """In a process of its own: it kills every descendant of the process that calls it."""
    import json

    done = subprocess.run([sys.executable, "-c", KILL_SCENARIO], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["killed"] >= 2 and found["victim"] == -9 and found["spared_alive"] and found["grandchildren"]
    deadline = time.monotonic() + 10
    while any(_state(p) not in ("gone", "Z") for p in found["grandchildren"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_state(p) in ("gone", "Z") for p in found["grandchildren"])


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_the_resume_command_repeats_what_was_given_and_names_the_campaign():
    kwargs = {"build": Path("runs/build"), "lake": "runs/my lake", "llm": "openai:gpt-4o-mini", "method": "evokernel",
              "budget": 12, "tasks": ["L1/001_relu", "L1/013_softmax"], "campaign_id": None, "order": "level",
              "report": None, "config_file": Path("my.toml"), "settings_overrides": {"parallel_tasks": 2}}
    words = shlex.split(resume_command(kwargs, "evokernel-gpt-4o-mini-20261124"))
    assert words == ["evokernel", "campaign", "--build", "runs/build", "--lake", "runs/my lake", "--llm",
                     "openai:gpt-4o-mini", "--budget", "12", "--config", "my.toml", "--tasks",
                     "L1/001_relu,L1/013_softmax", "--parallel-tasks", "2", "--campaign-id",
                     "evokernel-gpt-4o-mini-20261124"]
