"""Every path a command writes is checked before any work, and a write that fails anyway is one line
(issue 39, item 3): `lake export --out` / `lake query --out` into a missing or read-only directory,
`report` on a lake whose attempts Parquet file is truncated (the damaged file named, as `lake query`
does), and the directories `build`, `report`, `experiment`, `demo` and `campaign --report` fill.
Real command in a fresh process, real lake on a temp dir."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from test_cli_bad_inputs import assert_one_line, run_cli

from memory_lake import Lake


@pytest.fixture
def lake(tmp_path) -> Path:
    root = tmp_path / "lake"
    with Lake.create(root, "cpu") as created:
        created.append("attempts", [{"attempt_id": f"a{i}", "campaign_id": "c", "task_id": "KB-L1/1_ReLU", "stage": 1,
                                     "iteration": i, "feedback": "x" * 200} for i in range(3)])
    return root


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory nobody may create files in, root included (chattr +i), else one this user may not."""
    path = tmp_path / "read-only"
    path.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("running as root without chattr: no directory is read-only to this process")
    else:
        path.chmod(0o555)
    yield path
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    path.chmod(0o755)


def test_lake_export_into_a_missing_directory(lake, tmp_path):
    result = run_cli("lake", "export", "--lake", str(lake), "--out", str(tmp_path / "missing" / "f.parquet"), cwd=tmp_path)
    assert_one_line(result, f"--out {tmp_path / 'missing' / 'f.parquet'}: directory {tmp_path / 'missing'} does not exist")


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "table"])
def test_lake_query_out_into_a_missing_directory(lake, tmp_path, fmt):
    out = tmp_path / "missing" / f"x.{fmt}"
    result = run_cli("lake", "query", "--lake", str(lake), "--format", fmt, "--out", str(out), "SELECT 1 AS one",
                     cwd=tmp_path)
    assert_one_line(result, f"--out {out}: directory {tmp_path / 'missing'} does not exist (create it first)")


def test_lake_query_and_export_into_a_read_only_directory(lake, tmp_path, read_only_dir):
    out = read_only_dir / "x.csv"
    result = run_cli("lake", "query", "--lake", str(lake), "--format", "csv", "--out", str(out), "SELECT 1 AS one",
                     cwd=tmp_path)
    assert_one_line(result, f"--out {out}: directory {read_only_dir} is not writable")
    result = run_cli("lake", "export", "--lake", str(lake), "--out", str(read_only_dir / "f.parquet"), cwd=tmp_path)
    assert_one_line(result, f"directory {read_only_dir} is not writable")


def test_a_write_that_fails_after_the_checks_is_one_line(lake, tmp_path, read_only_dir):
    """The checks passed (root ignores permission bits; a mount may turn read-only meanwhile): the write's own
    error is the one line, through the same render the command uses."""
    import typer

    from cli.lake_cmd import render
    from memory_lake import readonly
    from memory_lake.storage import parse

    result = readonly.query(parse(str(lake)), "SELECT 1 AS one")
    with pytest.raises(typer.Exit) as exited:
        render(result, "csv", read_only_dir / "x.csv")
    assert exited.value.exit_code == 2


def test_report_on_a_lake_with_a_truncated_attempts_file_names_the_file(lake, tmp_path):
    (damaged,) = sorted((lake / "data").rglob("attempts/*.parquet"))
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    query = run_cli("lake", "query", "--lake", str(lake), "SELECT * FROM attempts", cwd=tmp_path)
    assert_one_line(query, str(damaged))
    report = run_cli("report", "--lake", str(lake), "--out", str(tmp_path / "report"), cwd=tmp_path)
    line = assert_one_line(report, f"{lake}: cannot read the lake:", str(damaged))
    assert "Traceback" not in report.stderr, line


@pytest.mark.parametrize("command", [
    ["report", "--lake", "{lake}", "--out", "{file}/report"],
    ["build", "--backend", "cpu", "--out", "{file}/build"],
    ["experiment", "--build", "{file}", "--llm", "scripted:demo", "--out", "{file}/e"],
    ["demo", "--out", "{file}/demo"],
])
def test_an_output_directory_below_a_file_is_refused_before_any_work(command, lake, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    args = [a.format(lake=lake, file=blocker) for a in command]
    result = run_cli(*args, cwd=tmp_path)
    assert_one_line(result, f"{blocker} is a file, so the directory cannot be made")
