"""The campaign flow under Prefect's test harness (two tasks end to end, report and artifacts
included; the same on a Dask cluster of worker processes, every task run in the one API), a campaign
subprocess killed mid-run then resumed (no attempt duplicated or lost), and the CLI on a Dask
scheduler's workers reporting to the one Prefect server the CLI started."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
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
    state = flow(build=str(tiny_build.root), lake=str(tmp_path / "lake"), llm=f"scripted:{script}",
                 budget=3, tasks=ids, campaign_id="flow-test", report_out=str(tmp_path / "report"),
                 settings_overrides={**FAST, "parallel_tasks": 2}, return_state=True)
    result = state.result()
    assert [t["task_id"] for t in result["tasks"]] == ids
    assert all(t["attempts"] == 3 and t["feasible"] and t["first_feasible_iteration"] == 1 for t in result["tasks"])
    lake = Lake.open(tmp_path / "lake")
    states = lake.query("SELECT status FROM campaigns WHERE campaign_id = 'flow-test' ORDER BY recorded_at").to_pylist()
    assert [s["status"] for s in states] == ["running", "finished"]
    distilled = lake.query("SELECT count(*) AS n FROM items WHERE kind = 'experience'").to_pylist()[0]["n"]
    assert distilled == 2  # one per task, from the scripted distillation
    assert lake.query("SELECT count(*) AS n FROM llm_calls WHERE purpose = 'distill'").to_pylist()[0]["n"] == 2
    assert (tmp_path / "report" / "index.html").is_file()
    _check_artifacts(state.state_details.flow_run_id, ids, tmp_path / "report" / "index.html")
    _check_task_states(state.state_details.flow_run_id)


def _check_task_states(flow_run_id) -> None:
    """A verification's task run is named for what happened (issue 39: a failed gate was logged as
    "Completed"): the syntax-error drafts Rejected, the correct kernels Passed; each task Solved."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])), limit=100)
    verify = Counter(r.state.name for r in runs if r.task_key.startswith("verify_code"))
    assert verify == {"Rejected": 2, "Passed": 4}, verify
    rejected = [r.state.message for r in runs if r.task_key.startswith("verify_code") and r.state.name == "Rejected"]
    assert all(m.startswith("failed compile: ") for m in rejected), rejected
    assert Counter(r.state.name for r in runs if r.task_key.startswith("run_campaign_task")) == {"Solved": 2}
    assert all(r.state.is_completed() for r in runs)


def _artifacts(**filters) -> dict[str, object]:
    from prefect import get_client
    from prefect.client.schemas import filters as f

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=f.ArtifactFilter(**filters), limit=50)
    return {a.key: a for a in found}


def _check_artifacts(flow_run_id, task_ids: list[str], html: Path) -> None:
    """Read back through the Prefect API: the campaign's summary, per-task table and report link, and
    the report subflow's own three."""
    from prefect.client.schemas.filters import ArtifactFilterFlowRunId, ArtifactFilterKey

    mine = _artifacts(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
    (summary,) = [key for key in mine if not key.endswith(("-tasks", "-report"))]
    assert summary.startswith("campaign-cpu-evokernel-") and set(mine) == {summary, f"{summary}-tasks", f"{summary}-report"}
    markdown = mine[summary].data
    assert "# Campaign `flow-test`" in markdown and "**2/2 tasks feasible** · 6 attempts" in markdown
    assert all(f"| {t} | 3 | yes | 1 |" in markdown for t in task_ids)
    rows = json.loads(mine[f"{summary}-tasks"].data)
    assert [(r["task_id"], r["attempts"], r["feasible"]) for r in rows] == [(t, 3, True) for t in task_ids]
    assert mine[f"{summary}-report"].data == f"[index.html]({html.resolve().as_uri()})"
    report = _artifacts(key=ArtifactFilterKey(any_=["report-report", "report-report-tasks", "report-report-html"]))
    assert "Campaigns compared" in report["report-report"].data and "flow-test" in report["report-report"].data
    assert sorted(r["task_id"] for r in json.loads(report["report-report-tasks"].data)) == sorted(task_ids)
    assert report["report-report-html"].data == mine[f"{summary}-report"].data


def test_dask_campaign_runs_every_task_in_the_flows_prefect_api(prefect_harness, tmp_path, tiny_build):
    """Two Dask worker processes (a local cluster): their task runs are in the flow's API (the test
    harness's server) and their attempts in the one lake."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from flows.campaign import campaign, make_task_runner

    ids = [t.task_id for t in tiny_build.runnable()]
    script = write_script(tmp_path / "s.json", ids, draft=["relu_draft_scalar"], refine=["relu_refine_omp"])
    state = campaign.with_options(task_runner=make_task_runner("dask", 2))(
        build=str(tiny_build.root), lake=str(tmp_path / "lake"), llm=f"scripted:{script}", budget=2, tasks=ids,
        campaign_id="dask-flow", settings_overrides={**FAST, "parallel_tasks": 2}, return_state=True)
    assert [t["attempts"] for t in state.result()["tasks"]] == [2, 2]
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(
            any_=[state.state_details.flow_run_id])), limit=100)
    assert Counter(r.task_key.rsplit("-", 1)[0] for r in runs) == {"run_campaign_task": 2, "llm_generate": 6, "compare_kernels": 2,
                                                                   "verify_code": 4}
    assert all(r.state.is_completed() for r in runs)
    rows = Lake.open(tmp_path / "lake").query("SELECT task_id, count(*) AS n FROM attempts GROUP BY ALL ORDER BY 1")
    assert [(r["task_id"], r["n"]) for r in rows.to_pylist()] == [(t, 2) for t in sorted(ids)]


def _campaign_cmd(build: Path, lake: Path, script: Path, config: Path) -> list[str]:
    return [sys.executable, "-m", "cli.main", "campaign", "--build", str(build), "--lake", str(lake),
            "--llm", f"scripted:{script}", "--budget", "4", "--campaign-id", "resume-me", "--config", str(config)]


def _committed_attempts(lake: Path) -> int:
    """Attempts committed so far, read while the campaign writes (the catalog admits other processes)."""
    if not Lake.exists(lake):
        return 0
    with Lake.open(lake) as reader:
        return reader.query("SELECT count(*) AS n FROM attempts").column("n")[0].as_py()


def test_killed_campaign_resumes_without_duplicates_or_losses(tmp_path, tiny_build, prefect_home):
    task = tiny_build.runnable()[0]
    script = write_script(tmp_path / "s.json", [task.task_id], draft=["relu_draft_hack", "relu_draft_scalar"],
                          refine=["relu_refine_omp", "relu_refine_leaky_bug"])
    config = tmp_path / "evokernel.toml"
    config.write_text("latency_rounds = 5\n")
    lake = tmp_path / "lake"
    env = {**os.environ, "PREFECT_HOME": str(prefect_home), "PYTHONPATH": str(ROOT)}
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


def test_cli_on_a_dask_scheduler_reports_every_task_run_to_its_one_prefect_server(tmp_path, tiny_build, prefect_home):
    """With no PREFECT_API_URL the CLI starts one Prefect server; the workers of a Dask scheduler (two
    worker processes started here, whose Prefect home is not the CLI's) report every task run to it,
    start no server of their own, and write every attempt to the one lake; the bar reads the lake."""
    from distributed import Client, LocalCluster

    ids = [t.task_id for t in tiny_build.runnable()]
    script = write_script(tmp_path / "s.json", ids, draft=["relu_draft_scalar"], refine=["relu_refine_omp"])
    config = tmp_path / "evokernel.toml"
    config.write_text("latency_rounds = 5\nparallel_tasks = 2\n")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(prefect_home), PYTHONPATH=str(ROOT))

    def servers_started_here() -> list:
        from prefect.server.api.server import SubprocessASGIServer

        return list(SubprocessASGIServer._instances)

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        cmd = [sys.executable, "-m", "cli.main", "campaign", "--build", str(tiny_build.root), "--lake",
               str(tmp_path / "lake"), "--llm", f"scripted:{script}", "--budget", "2", "--campaign-id", "dask",
               "--config", str(config), "--dask-address", cluster.scheduler_address]
        done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        per_worker = client.run(servers_started_here)
    assert len(per_worker) == 2 and all(found == [] for found in per_worker.values()), per_worker
    assert "Prefect API for this campaign: http://127.0.0.1:" in done.stdout and "4/4" in done.stdout
    with sqlite3.connect(prefect_home / "prefect.db") as db:  # the CLI's server's database
        keys = Counter(k.rsplit("-", 1)[0] for (k,) in db.execute("SELECT task_key FROM task_run"))
    assert keys == {"run_campaign_task": 2, "llm_generate": 6, "verify_code": 4, "compare_kernels": 2}
    rows = Lake.open(tmp_path / "lake").query("SELECT task_id, count(*) AS n, bool_or(feasible) AS ok "
                                              "FROM attempts GROUP BY task_id ORDER BY task_id").to_pylist()
    assert [(r["task_id"], r["n"], r["ok"]) for r in rows] == [(t, 2, True) for t in sorted(ids)]
