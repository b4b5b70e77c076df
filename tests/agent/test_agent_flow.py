"""The campaign flow under Prefect's test harness (two tasks end to end, report included), and a
campaign subprocess killed mid-run then resumed: no attempt duplicated or lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agent_fixtures import write_script
from memory_lake import Lake

FAST = {"latency_rounds": 5, "verify_threads": 2}
ROOT = Path(__file__).resolve().parents[2]


def test_two_task_campaign_flow_end_to_end(prefect_harness, tmp_path, tiny_build):
    """Both tasks run at once (same level, parallel_tasks=2, threads) and share the lake."""
    from flows.campaign import campaign, make_task_runner

    ids = [t.task_id for t in tiny_build.runnable()]
    script = write_script(tmp_path / "s.json", ids, draft=["relu_draft_syntax", "relu_draft_scalar"],
                          refine=["relu_refine_omp"])
    flow = campaign.with_options(task_runner=make_task_runner("threads", 2))
    result = flow(build=str(tiny_build.root), lake=str(tmp_path / "lake"), llm=f"scripted:{script}",
                  budget=3, tasks=ids, campaign_id="flow-test", report_out=str(tmp_path / "report"),
                  settings_overrides={**FAST, "parallel_tasks": 2})
    assert [t["task_id"] for t in result["tasks"]] == ids
    assert all(t["attempts"] == 3 and t["feasible"] and t["first_feasible_iteration"] == 1 for t in result["tasks"])
    lake = Lake.open(tmp_path / "lake")
    states = lake.query("SELECT status FROM campaigns WHERE campaign_id = 'flow-test' ORDER BY recorded_at").to_pylist()
    assert [s["status"] for s in states] == ["running", "finished"]
    distilled = lake.query("SELECT count(*) AS n FROM items WHERE kind = 'experience'").to_pylist()[0]["n"]
    assert distilled == 2  # one per task, from the scripted distillation
    assert lake.query("SELECT count(*) AS n FROM llm_calls WHERE purpose = 'distill'").to_pylist()[0]["n"] == 2
    assert (tmp_path / "report" / "index.html").is_file()


def _campaign_cmd(build: Path, lake: Path, script: Path, config: Path) -> list[str]:
    return [sys.executable, "-m", "cli.main", "campaign", "--build", str(build), "--lake", str(lake),
            "--llm", f"scripted:{script}", "--budget", "4", "--campaign-id", "resume-me", "--config", str(config)]


def _committed_attempts(lake: Path) -> int:
    """Attempts committed so far, read while the campaign writes (the catalog admits other processes)."""
    if not Lake.exists(lake):
        return 0
    with Lake.open(lake) as reader:
        return reader.query("SELECT count(*) AS n FROM attempts").column("n")[0].as_py()


def test_killed_campaign_resumes_without_duplicates_or_losses(tmp_path, tiny_build):
    task = tiny_build.runnable()[0]
    script = write_script(tmp_path / "s.json", [task.task_id], draft=["relu_draft_hack", "relu_draft_scalar"],
                          refine=["relu_refine_omp", "relu_refine_leaky_bug"])
    config = tmp_path / "evokernel.toml"
    config.write_text("latency_rounds = 5\n")
    lake = tmp_path / "lake"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "PYTHONPATH": str(ROOT)}
    cmd = _campaign_cmd(tiny_build.root, lake, script, config) + ["--tasks", task.task_id]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while _committed_attempts(lake) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its ephemeral Prefect server, mid-step
    proc.wait()
    killed_at = _committed_attempts(lake)
    assert 2 <= killed_at < 4, "the campaign must be killed mid-run for this test to mean anything"
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    con = Lake.open(lake)
    rows = con.query("SELECT iteration FROM attempts WHERE campaign_id = 'resume-me' ORDER BY iteration").to_pylist()
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3]
    dup_retrievals = con.query("SELECT attempt_id, rank, count(*) AS n FROM retrievals "
                               "GROUP BY ALL HAVING count(*) > 1").num_rows
    dup_updates = con.query("SELECT attempt_id, item_id, stage, count(*) AS n FROM value_updates "
                            "GROUP BY ALL HAVING count(*) > 1").num_rows
    assert dup_retrievals == 0 and dup_updates == 0
    traces = con.query("SELECT count(*) AS n FROM items WHERE kind = 'trace'").to_pylist()[0]["n"]
    assert traces == 4


def test_waves_keep_levels_in_order_and_bound_the_width(tiny_build):
    from dataclasses import replace

    from flows.campaign import task_waves

    a, b = tiny_build.runnable()
    specs = [a, b, replace(a, task_id="x", level=2), replace(b, task_id="y", level=2), replace(b, task_id="z", level=2)]
    waves = task_waves(specs, 2)
    assert [[t.task_id for t in w] for w in waves] == [[a.task_id, b.task_id], ["x", "y"], ["z"]]
    assert [len(w) for w in task_waves(specs, 1)] == [1, 1, 1, 1, 1]


def test_dask_task_runner_runs_a_campaign(tmp_path, tiny_build):
    """The Dask runner (prefect-dask, local cluster of worker processes) through the CLI."""
    ids = [t.task_id for t in tiny_build.runnable()]
    script = write_script(tmp_path / "s.json", ids, draft=["relu_draft_scalar"], refine=["relu_refine_omp"])
    config = tmp_path / "evokernel.toml"
    config.write_text('latency_rounds = 5\nparallel_tasks = 2\ntask_runner = "dask"\n')
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "cli.main", "campaign", "--build", str(tiny_build.root), "--lake",
           str(tmp_path / "lake"), "--llm", f"scripted:{script}", "--budget", "2", "--campaign-id", "dask",
           "--config", str(config)]
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = Lake.open(tmp_path / "lake").query("SELECT task_id, count(*) AS n, bool_or(feasible) AS ok "
                                              "FROM attempts GROUP BY task_id ORDER BY task_id").to_pylist()
    assert [(r["task_id"], r["n"], r["ok"]) for r in rows] == [(t, 2, True) for t in sorted(ids)]
