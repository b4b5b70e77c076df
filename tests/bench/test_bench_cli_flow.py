"""`evokernel build` (CLI) and the Prefect `build_benchmark` flow over a tiny KernelBench checkout."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import bench_fixtures as fx
from cli.main import app
from kernelbench_npu.spec import load_build


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    root = tmp_path_factory.mktemp("kb")
    return fx.write_checkout(root, {"level1/19_ReLU.py": fx.GOOD_RELU, "level1/20_Const.py": fx.CONSTANT,
                                    "level2/3_Matmul.py": fx.GOOD_MATMUL})


def test_cli_build_prints_progress_and_the_hash_last(checkout, tmp_path):
    result = CliRunner().invoke(app, ["build", "--backend", "ascendc", "--source", str(checkout), "--levels", "1,2",
                                      "--no-bundled", "--out", str(tmp_path / "b"), "--dtype", "fp32,fp16"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    build = load_build(tmp_path / "b")
    assert lines[-1] == build.build_hash and build.backend == "ascendc"
    assert any(line.startswith("lint KB-L1/19_ReLU") for line in lines)
    ids = sorted(t.task_id for t in build.tasks)
    assert ids == ["KB-L1/19_ReLU", "KB-L1/19_ReLU@fp16", "KB-L1/20_Const", "KB-L1/20_Const@fp16",
                   "KB-L2/3_Matmul", "KB-L2/3_Matmul@fp16"]
    fp16 = build.task("KB-L1/19_ReLU@fp16")
    assert fp16.dtype == "float16" and fp16.rtol == 1e-2 and fp16.problem_path == build.task("KB-L1/19_ReLU").problem_path


def test_cli_explain_prints_sizes_tolerance_and_verdict_of_one_task(checkout, tmp_path):
    out = tmp_path / "b"
    assert CliRunner().invoke(app, ["build", "--source", str(checkout), "--levels", "1", "--no-bundled",
                                    "--out", str(out), "--quiet"]).exit_code == 0
    explained = CliRunner().invoke(app, ["build", "--explain", "KB-L1/20_Const", "--out", str(out)])
    assert explained.exit_code == 0, explained.output
    text = explained.output
    assert "KB-L1/20_Const  (cpu, float32, level 1" in text and "batch_size" in text and "dim" in text
    assert "tolerance      atol=" in text and "lint           task sizes" in text
    assert "verdict        quarantined: output is constant" in text
    missing = CliRunner().invoke(app, ["build", "--explain", "KB-L1/404", "--out", str(out)])
    assert missing.exit_code == 2 and "--explain KB-L1/404: not a task of the build" in missing.output


@pytest.mark.parametrize("args, message", [
    (["--backend", "tpu"], "backend 'tpu' unknown"),
    (["--levels", "1,9"], "--levels"),
    (["--source", "/no/such/dir"], "not a directory"),
])
def test_cli_build_bad_input_is_one_line_exit_2(args, message, tmp_path):
    result = CliRunner().invoke(app, ["build", "--out", str(tmp_path / "x"), *args])
    assert result.exit_code == 2 and message in result.output
    assert len([ln for ln in result.output.splitlines() if ln.startswith("error:")]) == 1


def test_plan_task_body_and_cache_key_agree(checkout):
    from tasks.build import plan_benchmark, plan_cache_key

    plan = plan_benchmark.fn("cpu", [str(checkout)], [1], False, None)
    assert [t.task_id for t in plan.tasks] == ["KB-L1/19_ReLU", "KB-L1/20_Const"]
    key = plan_cache_key(None, {"backend": "cpu", "sources": [str(checkout)], "levels": [1], "include_bundled": False})
    assert key == f"build-plan-{plan.build_hash}"


@pytest.mark.flow
def test_flow_builds_and_a_rerun_hits_the_cache(prefect_harness, checkout, tmp_path):
    from prefect.client.orchestration import get_client

    from flows.build_benchmark import build_benchmark

    params = dict(backend="cpu", sources=[str(checkout)], levels=[1, 2], include_bundled=False)
    first = build_benchmark(**params, out=str(tmp_path / "a"))
    second = build_benchmark(**params, out=str(tmp_path / "b"))
    assert first["build_hash"] == second["build_hash"] == load_build(tmp_path / "b").build_hash
    assert first["counts"] == {1: {"ok": 1, "quarantined": 1}, 2: {"ok": 1, "quarantined": 0}}
    with get_client(sync_client=True) as client:
        states = [(r.name, r.state.name) for r in client.read_task_runs()]
    lint_states = [s for name, s in states if name.startswith("lint-build")]
    assert sorted(lint_states) == ["Cached", "Completed"], states
