"""`evokernel prompt`: the exact prompt of a step, built by the campaign's prepare_step, with the
section sizes; the lake is read, never written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from evokernel.agent.preview import preview_step
from evokernel.agent.runtime import agent_context, open_lake
from evokernel.agent.rewards import PairedSpeedup
from evokernel.agent.state import StartPoint, TaskState
from evokernel.agent.step import prepare_step
from evokernel.config import load_settings
from memory_lake import Lake, NewItem
from verifier.backends.cpu import CpuBackend

KERNEL = ("import torch\nfrom verifier.cpu_native import load_c\n\nlib = load_c('extern \"C\" void k{tag}() {{}}', {{}})\n\n"
          "class ModelNew(torch.nn.Module):\n    def forward(self, x):  # kernel {tag}\n        return x\n")


def _prompt(*args: str):
    result = CliRunner().invoke(app, ["prompt", *args])
    return result.exit_code, result.output


def _files(root: Path) -> list[tuple[str, int]]:
    """The lake's data and catalog files: not the lock file an open makes, nor the WAL index and log
    SQLite keeps beside a WAL-mode catalog while anyone reads it (-shm, -wal: no lake content)."""
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*")
                  if p.is_file() and p.name != "_lake.lock" and not p.name.endswith(("-shm", "-wal")))


@pytest.fixture
def lake_with_kernels(tmp_path, tiny_build):
    """A lake holding three feasible kernels of the first task (two with the same code) and one of
    the other task with that same code, as a campaign writes them."""
    task, other = tiny_build.runnable()[:2]
    lake = open_lake(tmp_path / "lake", CpuBackend())
    trace = dict(kind="trace", backend="cpu", category="activation", body="all gates passed", feasible=True)
    lake.add_items([
        NewItem(**trace, item_id="t0", task_id=task.task_id, title="iteration 0: feasible, 0.40 ms",
                code=KERNEL.format(tag="A"), latency_ms=0.4, speedup=2.0),
        NewItem(**trace, item_id="t1", task_id=task.task_id, title="iteration 1: feasible, 0.50 ms",
                code=KERNEL.format(tag="A"), latency_ms=0.5, parent_item_id="t0"),
        NewItem(**trace, item_id="t2", task_id=task.task_id, title="iteration 2: feasible, 0.45 ms",
                code=KERNEL.format(tag="B"), latency_ms=0.45, speedup=2.2, parent_item_id="t0"),
        NewItem(**trace, item_id="o1", task_id=other.task_id, title="other task: feasible",
                code=KERNEL.format(tag="A"), latency_ms=0.3),
    ])
    lake.close()
    return tmp_path / "lake", task


def test_a_first_draft_on_a_lake_not_yet_made(tmp_path, tiny_build):
    task = tiny_build.runnable()[0]
    code, out = _prompt("--build", str(tiny_build.root), "--task", task.task_id, "--lake", str(tmp_path / "lake"))
    assert code == 0, out
    assert f"# {task.task_id}, stage 1 (draft): the first draft of a new campaign; no lake at" in out
    assert "You are an expert performance engineer" in out and task.source.strip() in out
    assert out.count("The fast loader: `from verifier.cpu_native import load_c`") == 1
    # the scaffold (with its worked example) is the backend's seed knowledge, shown once; a new lake
    # holds no copy of it, so no retrieval slot is spent on it
    assert "with the cpu backend's 0 seed item(s) beyond its scaffold" in out
    assert "not repeated" not in out and "(no memory items yet)" in out
    table = out.split("======== sections")[1]
    for name in ("system", "reference program", "backend scaffold", "retrieved memory", "verifier feedback",
                 "instructions", "total"):
        assert f"\n{name} " in table, name
    assert not (tmp_path / "lake").exists()  # shown on a temporary lake, nothing made at --lake


def test_a_refine_prompt_shows_each_kernel_once_and_writes_nothing(lake_with_kernels, tiny_build):
    lake, task = lake_with_kernels
    before = _files(lake)
    with Lake.open(lake) as opened:
        snapshots = opened.snapshots()
    code, out = _prompt("--build", str(tiny_build.root), "--task", task.task_id, "--lake", str(lake), "--stage", "2")
    assert code == 0, out
    assert "refining the task's 3 feasible kernel(s) in the lake" in out
    assert out.count("# kernel A") == 0 and out.count("# kernel B") == 1
    # the start point is the highest paired speedup (t2, 2.2x), not the lowest raw latency (t0, 0.4 ms);
    # t0 and t1 are the task's own kernels (start points a step may choose, never retrieved: issue 35),
    # o1 (another task's, untimed) is no optimisation trace: no slot goes to any of them
    assert "0.45 ms, 2.20x vs reference**" in out  # the start point
    assert "iteration 0: feasible" not in out and "iteration 1: feasible" not in out
    # the incumbent is the highest paired speedup (t2, timed under more load), not the lowest latency (t0)
    assert ("The best correct kernel so far runs 2.2x as fast as the reference: the median over rounds of "
            "reference time / its time, both timed in each round (0.45 ms in that run); beat that speedup.") in out
    assert _files(lake) == before  # no retrievals recorded, nothing compacted or added
    with Lake.open(lake) as opened:
        assert opened.snapshots() == snapshots  # no commit, not even one held in the catalog's WAL


def test_stage_2_without_a_feasible_kernel_is_a_one_line_error(tmp_path, tiny_build):
    task = tiny_build.runnable()[0]
    code, out = _prompt("--build", str(tiny_build.root), "--task", task.task_id, "--lake", str(tmp_path / "l"),
                        "--stage", "2")
    assert code == 2 and out.strip().count("\n") == 0
    assert f"error: no feasible kernel of task {task.task_id} in the lake" in out


def test_the_preview_is_the_request_the_campaign_step_sends(lake_with_kernels, tiny_build):
    lake_root, task = lake_with_kernels
    settings = load_settings(None, build=tiny_build.root, lake=lake_root, epsilon=0.0)
    shown = preview_step(settings, task.task_id, stage=2).plan
    lake = open_lake(lake_root, CpuBackend())
    try:
        ctx = agent_context(settings, CpuBackend(), lake, settings.llm, "prompt-preview")
        # iteration 0 each: the lake's kernels were written without attempts (as the preview reads them)
        points = tuple(StartPoint(i, KERNEL.format(tag=t), ms, s, 0) for i, t, ms, s in
                       (("t0", "A", 0.4, 2.0), ("t1", "A", 0.5, None), ("t2", "B", 0.45, 2.2)))
        state = TaskState(task.task_id, iterations_done=3, start_points=points, best_ms=0.45, best_item_id="t2",
                          best=PairedSpeedup(2.2, 2.2, 2.2), first_feasible_iteration=0,
                          last_feedback="all gates passed")
        sent = prepare_step(ctx, task, state)  # as a campaign calls it: retrievals recorded
        assert sent.request == shown.request and sent.prompt_sections == shown.prompt_sections
        assert lake.query("SELECT count(*) AS n FROM retrievals").to_pylist()[0]["n"] == len(sent.context)
    finally:
        lake.close()


def test_no_slot_goes_to_what_the_prompt_already_shows(tmp_path, tiny_build):
    """A lake seeded before (with the scaffold's own text as templates) and holding repeats: a draft's
    slots go to items that add something; templates beyond the scaffold compete like any item."""
    task = tiny_build.runnable()[0]
    lake = Lake.create(tmp_path / "lake", "cpu", seed_items=CpuBackend().seed_items())  # as older lakes were
    lake.add_items([
        NewItem(kind="api_template", backend="cpu", category="activation", item_id="tpl-simd", title="relu with simd",
                body="relu activation: `#pragma omp parallel for simd` over the flat array; no branches."),
        NewItem(kind="experience", backend="cpu", category="activation", item_id="exp-a", title="relu hack",
                body="relu activation: torch.relu in forward fails the hack gate; write the loop in C."),
        NewItem(kind="experience", backend="cpu", category="activation", item_id="exp-b", title="relu hack again",
                body="relu activation: torch.relu in forward fails the hack gate; write the loop in C."),
    ])
    seeded = {t.item_id for t in lake.template_items("cpu")} - {"tpl-simd"}
    lake.close()
    settings = load_settings(None, build=tiny_build.root, lake=tmp_path / "lake", epsilon=0.0)
    plan = preview_step(settings, task.task_id, stage=1).plan
    chosen = [item.item_id for item in plan.context]
    assert "tpl-simd" in chosen and not set(chosen) & seeded  # the scaffold's copies are never candidates
    assert len({"exp-a", "exp-b"} & set(chosen)) == 1  # two items with the same text: one slot
    memory = next(s for s in plan.prompt_sections if s.name == "retrieved memory")
    assert memory.items_collapsed == 0 and memory.items_shown == len(chosen) == 2
    assert "not repeated" not in plan.request.prompt
