"""The bad inputs of issue 27, through the real `evokernel` command in a fresh process: exit 2, one
line on stderr naming the option, file or variable, no traceback, and nothing started or created
(no lake, no Prefect database under PREFECT_HOME). Times to fail: benchmarks/bad_inputs.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RELU_SOLUTION = ROOT / "kernelbench_npu" / "solutions" / "cpu" / "level1" / "001_relu.py"


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": str(cwd),
            "XDG_CACHE_HOME": str(cwd / "cache"), "PREFECT_HOME": str(cwd / "prefect")}
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          env={**base, **(env or {})}, timeout=300)


def assert_one_line(result: subprocess.CompletedProcess, *fragments: str) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def nothing_started(cwd: Path, *paths: Path) -> None:
    prefect = cwd / "prefect"
    assert not prefect.exists() or not any(prefect.rglob("*.db")), "a Prefect server was started"
    for path in paths:
        assert not path.exists(), f"{path} was created"


@pytest.fixture
def bad(tmp_path, kb_build):
    """Bad inputs next to a good build: a corrupt copy of it, a regular file, a damaged lake catalog."""
    corrupt = tmp_path / "corrupt-build"
    shutil.copytree(kb_build.root, corrupt)
    (corrupt / "manifest.parquet").write_text("not parquet")
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "catalog.sqlite").write_text("garbage")
    return {"build": str(kb_build.root), "corrupt": str(corrupt), "file": str(tmp_path / "a-file"),
            "damaged": str(tmp_path / "damaged"), "lake": str(tmp_path / "new-lake")}


CAMPAIGN_CASES = {
    "unknown task": (["--tasks", "KB-L1/19_ReLU"], {}, ["--tasks KB-L1/19_ReLU: not a task", "did you mean KB-L1/1_ReLU"]),
    "unknown provider": (["--llm", "foo:bar"], {}, ["--llm foo:bar: unknown LLM provider 'foo'"]),
    "missing API key": (["--llm", "openai:gpt-4o-mini"], {}, ["OPENAI_API_KEY is not set"]),
    "budget 0": (["--budget", "0"], {}, ["--budget 0: "]),
    "budget from the environment": ([], {"EVOKERNEL_BUDGET": "0"}, ["environment: EVOKERNEL_BUDGET=0"]),
    "lake is a file": (["--lake", "{file}"], {}, ["is a file, not a lake"]),
    "damaged catalog": (["--lake", "{damaged}"], {}, ["catalog.sqlite: not a SQLite database", "damaged"]),
    "corrupt manifest": (["--build", "{corrupt}"], {}, ["manifest.parquet: not a readable Parquet file"]),
    "quarantined task": (["--tasks", "KB-L1/3_Zeros"], {}, ["--tasks KB-L1/3_Zeros: quarantined"]),
    "unknown order": (["--order", "random"], {}, ["--order random: expected one of level, given"]),
}


@pytest.mark.parametrize("case", CAMPAIGN_CASES)
def test_campaign_refuses_bad_input_before_anything_starts(tmp_path, bad, case):
    extra, env, fragments = CAMPAIGN_CASES[case]
    args = {"--build": bad["build"], "--lake": bad["lake"], "--llm": "scripted:demo"}
    rest = [a.format(**bad) for a in extra]
    for flag, value in zip(rest[::2], rest[1::2]):
        args[flag] = value
    result = run_cli("campaign", *[x for pair in args.items() for x in pair], cwd=tmp_path, env=env)
    assert_one_line(result, *fragments)
    nothing_started(tmp_path, Path(bad["lake"]))


def test_a_cuda_lake_does_not_take_a_cpu_campaign(tmp_path, bad):
    from memory_lake import Lake

    Lake.create(tmp_path / "cuda-lake", "cuda").close()
    result = run_cli("campaign", "--build", bad["build"], "--lake", str(tmp_path / "cuda-lake"), "--llm",
                     "scripted:demo", "--budget", "1", cwd=tmp_path)
    assert_one_line(result, "a lake for backend 'cuda', but the build is for 'cpu'")
    nothing_started(tmp_path)


@pytest.mark.parametrize("case, fragments", [
    ("directory", ["is a directory; give the candidate's .py file"]),
    ("empty", ["the file is empty"]),
    ("nul", ["line 1, column 13: a NUL byte"]),
    ("unknown task", ["--task L1/001_relu: not a task of the build", "KB-L1/1_ReLU"]),
    ("corrupt manifest", ["manifest.parquet: not a readable Parquet file"]),
])
def test_verify_refuses_bad_input_before_the_verifier_runs(tmp_path, bad, case, fragments):
    candidate = {"directory": tmp_path, "empty": tmp_path / "e.py", "nul": tmp_path / "n.py"}.get(case, RELU_SOLUTION)
    (tmp_path / "e.py").write_text("")
    (tmp_path / "n.py").write_bytes(b"import torch\x00\n")
    build = bad["corrupt"] if case == "corrupt manifest" else bad["build"]
    task = "L1/001_relu" if case == "unknown task" else "KB-L1/1_ReLU"
    result = run_cli("verify", "--build", build, "--task", task, "--candidate", str(candidate), cwd=tmp_path)
    assert_one_line(result, *fragments)
    assert "line None" not in result.stderr + result.stdout


def test_build_explain_list_prompt_and_report_share_the_checks(tmp_path, bad):
    assert_one_line(run_cli("build", "--explain", "KB-L1/1_Relu", "--out", bad["build"], cwd=tmp_path),
                    "--explain KB-L1/1_Relu: not a task", "did you mean KB-L1/1_ReLU")
    assert_one_line(run_cli("build", "--list", "--out", bad["corrupt"], cwd=tmp_path), "not a readable Parquet file")
    assert_one_line(run_cli("prompt", "--build", bad["build"], "--task", "KB-L1/1_ReLU", "--lake", bad["damaged"],
                            cwd=tmp_path), "catalog.sqlite: not a SQLite database")
    assert_one_line(run_cli("report", "--lake", bad["file"], "--out", str(tmp_path / "r"), cwd=tmp_path),
                    "is a file, not a lake")
    assert_one_line(run_cli("lake", "init", "--lake", bad["file"], "--backend", "cpu", cwd=tmp_path),
                    "is a file, not a lake")
    nothing_started(tmp_path, tmp_path / "r")


def test_build_list_shows_every_task_with_level_category_and_lint(tmp_path, kb_build):
    result = run_cli("build", "--list", "--out", str(kb_build.root), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["level", "category", "lint", "task"]
    rows = {line.split()[3]: line.split(None, 4)[:3] + line.split(None, 4)[4:] for line in lines[1:-1]}
    assert rows["KB-L1/1_ReLU"] == ["1", "activation", "ok"]
    assert rows["KB-L1/3_Zeros"][:3] == ["1", "activation", "quarantined"]
    assert rows["KB-L1/3_Zeros"][3].startswith("(") and rows["KB-L1/3_Zeros"][3].endswith(")")  # the reason
    assert [line.split()[3] for line in lines[1:-1]] == ["KB-L1/1_ReLU", "KB-L1/2_Tanh", "KB-L1/3_Zeros"]
    assert lines[-1].startswith("3 tasks (2 ok, 1 quarantined)") and lines[-1].endswith(f"hash {kb_build.build_hash}")


def test_build_list_sorts_ids_numerically_and_pads_no_column_to_a_long_id(tmp_path):
    """KernelBench ids run to 102 characters (L1/75_conv_transposed_...): the id is the last column, and
    10_ comes after 9_ and before 100_ (issue 39)."""
    from cli.build_cmd import task_list
    from kernelbench_npu.spec import Build, TaskSpec

    def task(task_id: str) -> TaskSpec:
        return TaskSpec(task_id=task_id, level=1, category="activation", name=task_id, variant="cpu", dtype="float32",
                        source="", source_sha256="", atol=1e-5, rtol=1e-5, original_shapes="{}", adapted_shapes="{}",
                        lint_status="ok", lint_reason=None, reference_ms=None, problem_path=tmp_path / "p.py")

    long_id = "KB-L1/75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__"
    ids = ["KB-L1/100_HingeLoss", "KB-L1/10_3D", long_id, "KB-L1/9_Tall", "KB-L1/1_Square"]
    build = Build(root=tmp_path, build_hash="0" * 64, backend="cpu", tasks=tuple(task(i) for i in ids))
    lines = task_list(build).splitlines()
    assert [line.split()[-1] for line in lines[1:-1]] == ["KB-L1/1_Square", "KB-L1/9_Tall", "KB-L1/10_3D", long_id,
                                                          "KB-L1/100_HingeLoss"]
    assert max(len(line) for line in lines[:-1]) == len(lines[4])  # only the long id's own line is long
    assert len(lines[1]) < 50


def test_lake_export_says_which_filters_matched_nothing(tmp_path):
    from typer.testing import CliRunner

    from cli.main import app
    from memory_lake import Lake, NewItem

    with Lake.create(tmp_path / "lake", "cpu") as lake:
        lake.add_items([NewItem(kind="experience", backend="cpu", title="t", body="b", task_id="KB-L1/1_ReLU")])
    base = ["lake", "export", "--lake", str(tmp_path / "lake"), "--out", str(tmp_path / "m.parquet")]
    wrong_kind = CliRunner().invoke(app, [*base, "--kinds", "traces"])
    assert wrong_kind.exit_code == 2 and wrong_kind.stderr.strip().startswith("error: --kinds traces: not an item kind")
    typo = CliRunner().invoke(app, [*base, "--exclude-tasks", "KB-L1/1_Relu"])
    assert typo.exit_code == 0 and "exported 1 items" in typo.stdout
    assert typo.stderr.strip() == ("note: --exclude-tasks KB-L1/1_Relu: no item of the lake belongs to this task, "
                                   "nothing left out for it; did you mean KB-L1/1_ReLU?")
