"""Every command the README and docs/ show is checked: parsed by its program's own parser (a removed
option or command fails), and the cheap ones run as shown.

What runs: the command lines in ``RUN`` (each as a ``bash`` block shows it; ``FASTER`` adds the options
that make a verification quick, e.g. fewer latency rounds), in a workspace
where ``runs/build-cpu`` and ``runs/demo/build`` are the session's bundled CPU build, ``my_kernel.py``
is the known-good relu and ``kernelbench_npu/`` is the repository's. ``NOT_RUN`` gives, for every other
command line of a ``bash`` block, why it is not run here; a command line in neither table fails
:func:`test_every_shown_command_line_is_run_or_has_a_reason`. Inline commands (``evokernel build
--explain TASK_ID`` in prose) are parsed only.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil

import pytest

from cli_parsers import (PLACEHOLDER, DocCommandError, benchmark_options, check_benchmark, dask_command,
                         evokernel_command, make_targets, parse_click)
from doc_commands import DocCommand, doc_commands

from benchmarks.__main__ import QUICK_ARGS

SOFTMAX = ("evokernel verify --build runs/build-cpu --task L1/013_softmax "
           "--candidate kernelbench_npu/solutions/cpu/level1/013_softmax.py")
LAKE_INIT = "evokernel lake init --lake runs/lake --backend cpu"
QUERY = 'evokernel lake query --lake runs/lake "SELECT task_id, max(speedup) FROM attempts GROUP BY 1"'

# command line as shown -> what its output must contain
RUN = {
    "evokernel --help": "Usage: evokernel",
    "evokernel build --list --out runs/build-cpu": "L1/001_relu",
    "evokernel config": '"lake"',
    "evokernel backends": "cpu: available",
    "evokernel toolchain list": "triton-ascend",
    LAKE_INIT: "created runs/lake for backend cpu",
    QUERY: "task_id",
    "evokernel prompt --build runs/demo/build --task L1/001_relu --lake runs/lake": "total",
    SOFTMAX: "[latency] ok",
    "evokernel verify --build runs/build-cpu --task L1/001_relu --candidate my_kernel.py --json": '"passed": true',
    "evokernel report --lake runs/lake --out runs/reports/latest": "written",
}
# options added to a command as shown when it runs here, and why
FASTER = {SOFTMAX: ["--rounds", "5"],  # 5 latency rounds, not 30: the test checks the command, not the timing
          "evokernel verify --build runs/build-cpu --task L1/001_relu --candidate my_kernel.py --json": ["--rounds", "5"]}

NETWORK = "needs the network beyond the package registries"
LLM = "calls an LLM API (a paid model; tests use the scripted provider and fake servers instead)"
KERNELBENCH = "needs a KernelBench checkout (a git fetch); the same code path builds a KernelBench-layout folder in tests/cli"
POSTGRES_S3 = "needs a PostgreSQL catalog and an S3 bucket on other hosts (tests/lake runs both on loopback)"
SERVER = "starts a server or worker that keeps running"
BENCH = "a benchmark: minutes of work, never a test (its module and options are checked)"
SHELL = "a shell builtin, not a program of ours"

# command line prefix as shown -> why it is not run here (its flags are still checked where ours)
NOT_RUN = {
    ". .venv/bin/activate": SHELL,
    "export ": SHELL,
    "echo ": SHELL + " (it writes ta.toml for the campaign below)",
    "make demo": "the demo itself (minutes; tests/cli/test_cli_demo.py runs its campaign); the target is checked",
    "make test": "the test suite itself; the target is checked",
    ".venv/bin/python -m pytest ": "the test suite itself, which this test is part of",
    "make bench": BENCH,
    ".venv/bin/python -m benchmarks.": BENCH,
    ".venv/bin/mkdocs ": "tests/docs/test_docs_build.py builds the site (serve keeps running)",
    "evokernel build --backend cpu --out runs/build-cpu": (
        "45-190 s; the session's bundled_cpu_build fixture builds the same benchmark once (build_benchmark, "
        "which the command calls) and this module runs the commands on it"),
    "evokernel build --backend ascendc --source ~/KernelBench": KERNELBENCH,
    "evokernel build --backend triton-ascend --source ~/KernelBench": KERNELBENCH,
    "evokernel campaign ": LLM,
    "evokernel experiment ": LLM,
    "evokernel toolchain install triton-ascend": NETWORK + " (700 MB from PyPI; tests/backends installs it when it can)",
    "evokernel prompt --build runs/demo/build --task L1/001_relu --lake runs/lake --stage 2": (
        "needs a lake with the task's feasible kernels, i.e. a campaign first (tests/agent/test_agent_prompt.py)"),
    "evokernel prompt ... --campaign-id ID --sizes-only": "needs a campaign ID (tests/agent/test_agent_prompt.py)",
    "evokernel lake init --lake $LAKE": POSTGRES_S3,
    "evokernel lake migrate runs/lake $LAKE": POSTGRES_S3,
    "createdb ": "PostgreSQL's own client, on the database host",
    "psql ": "PostgreSQL's own client, on the database host",
    "prefect ": SERVER + " (parsed by prefect's own CLI)",
    "dask ": SERVER + " (parsed by distributed's own CLI)",
    ".venv/bin/dask ": SERVER + " (parsed by distributed's own CLI)",
}

PREFECT_GLOBAL_FLAGS = {"--no-prompt", "--prompt"}  # options of `prefect` itself, before its command


def _fenced() -> list[DocCommand]:
    return [c for c in doc_commands() if not c.inline]


def _id(command: DocCommand) -> str:
    return f"{command.where} {command.text[:60]}"


ALL = doc_commands()


def test_the_docs_show_commands():
    assert len(ALL) > 50 and any(c.text == "evokernel --help" for c in ALL)


@pytest.mark.parametrize("command", [c for c in ALL if c.argv[0] == "evokernel"], ids=_id)
def test_evokernel_command_parses(command):
    """Each shown `evokernel` command line, parsed by the CLI's own parser (typer/click): every
    command, option and typed value shown exists. A fragment (inline, or with `...`) may leave out
    required arguments."""
    args = [a for a in command.argv[1:] if a != PLACEHOLDER]
    partial = command.inline or PLACEHOLDER in command.argv
    try:
        parse_click(evokernel_command(), "evokernel", args, partial)
    except DocCommandError as exc:
        pytest.fail(f"{command.where}: `{command.text}`: {exc}")


def test_a_removed_option_fails_the_check():
    with pytest.raises(DocCommandError, match="--no-such-option"):
        parse_click(evokernel_command(), "evokernel", ["lake", "query", "--no-such-option", "1"], True)
    with pytest.raises(DocCommandError, match="no-such-command"):
        parse_click(evokernel_command(), "evokernel", ["lake", "no-such-command"], True)
    with pytest.raises(DocCommandError):  # a typed value: --stage takes an integer
        parse_click(evokernel_command(), "evokernel", ["prompt", "--stage", "two"], True)


@pytest.mark.parametrize("command", [c for c in ALL if c.argv[0] == "make"], ids=_id)
def test_make_target_exists(command):
    assert set(command.argv[1:]) <= make_targets(), f"{command.where}: `{command.text}`: no such Makefile target"


def _benchmark(command: DocCommand) -> tuple[str, list[str]] | None:
    argv = list(command.argv)
    if "-m" in argv[:3] and argv[argv.index("-m") + 1].startswith("benchmarks"):
        index = argv.index("-m")
        return argv[index + 1], argv[index + 2:]
    if argv[0].startswith("benchmarks/") and argv[0].endswith(".py"):
        return argv[0][:-3].replace("/", "."), argv[1:]
    return None


@pytest.mark.parametrize("command", [c for c in ALL if _benchmark(c)], ids=_id)
def test_benchmark_module_and_options_exist(command):
    module, args = _benchmark(command)
    try:
        check_benchmark(module, args)
    except DocCommandError as exc:
        pytest.fail(f"{command.where}: {exc}")


@pytest.mark.parametrize("name", sorted(QUICK_ARGS))
def test_every_quick_benchmark_run_passes_options_its_benchmark_has(name):
    """``make bench`` / ``python -m benchmarks --quick`` hands these options to each benchmark."""
    check_benchmark(f"benchmarks.{name}", QUICK_ARGS[name])


def test_benchmark_option_check_can_fail():
    assert "--tasks" in benchmark_options("benchmarks.known_good_speedups")
    with pytest.raises(DocCommandError, match="--no-such"):
        check_benchmark("benchmarks.known_good_speedups", ["--no-such", "1"])
    with pytest.raises(DocCommandError, match="no such module"):
        check_benchmark("benchmarks.no_such_benchmark", [])


def test_prefect_commands_parse():
    """`prefect ...` lines parsed by prefect's own CLI (cyclopts): its commands and options exist."""
    from prefect.cli._app import _app

    shown = [c for c in ALL if c.argv[0] == "prefect"]
    assert shown
    for command in shown:
        args = [a for a in command.argv[1:] if a not in PREFECT_GLOBAL_FLAGS]
        _app.parse_args(args, exit_on_error=False, print_error=False)
    with pytest.raises(Exception, match="--no-such-option"):
        _app.parse_args(["server", "start", "--no-such-option", "1"], exit_on_error=False, print_error=False)


def test_dask_commands_parse():
    shown = [c for c in ALL if c.argv[0].endswith("dask")]
    assert shown
    for command in shown:
        parse_click(dask_command(command.argv[1]), f"dask {command.argv[1]}", list(command.argv[2:]), False)
    with pytest.raises(DocCommandError):
        parse_click(dask_command("scheduler"), "dask scheduler", ["--no-such-option", "1"], False)


def _reason_not_run(command: DocCommand) -> str | None:
    shown = " ".join(command.argv)  # quotes dropped: `--lake "$LAKE"` is `--lake $LAKE` here
    return next((why for prefix, why in NOT_RUN.items() if shown.startswith(prefix)), None)


def test_every_shown_command_line_is_run_or_has_a_reason():
    """A command line of a `bash` block is either run below (RUN) or says why not (NOT_RUN)."""
    run = {tuple(shlex.split(line)) for line in RUN}
    unaccounted = [c for c in _fenced() if c.argv not in run and not _reason_not_run(c)]
    assert not unaccounted, "add to RUN or NOT_RUN: " + "; ".join(f"{c.where}: `{c.text}`" for c in unaccounted)
    assert run <= {c.argv for c in _fenced()}, "RUN names a command the docs no longer show"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, bundled_cpu_build):
    """A directory laid out as the docs assume: runs/build-cpu and runs/demo/build (the session's
    bundled CPU build), the repository's kernelbench_npu/, and my_kernel.py (the known-good relu)."""
    from kernelbench_npu.known_good import SOLUTIONS_DIR, solution_path

    _, build = bundled_cpu_build
    root = tmp_path_factory.mktemp("docs-workspace")
    (root / "runs" / "demo").mkdir(parents=True)
    (root / "runs" / "build-cpu").symlink_to(build)
    (root / "runs" / "demo" / "build").symlink_to(build)
    (root / "kernelbench_npu").symlink_to(SOLUTIONS_DIR.parent)
    shutil.copy(solution_path("L1/001_relu"), root / "my_kernel.py")
    return root


@pytest.mark.parametrize("line", list(RUN), ids=[" ".join(shlex.split(line)[1:])[:70] for line in RUN])
def test_shown_command_runs(line, workspace, monkeypatch):
    """The command as shown exits 0 and prints what the docs say it does (the lake query, prompt and
    report read the lake that `lake init` made)."""
    from typer.testing import CliRunner

    from cli.main import app

    monkeypatch.chdir(workspace)
    lake = workspace / "runs" / "lake"
    if line == LAKE_INIT:
        shutil.rmtree(lake, ignore_errors=True)  # the command as a first-time user runs it
    elif not lake.exists():  # the commands that read the lake (on a worker that did not run LAKE_INIT)
        made = CliRunner().invoke(app, shlex.split(LAKE_INIT)[1:])
        assert made.exit_code == 0, made.output
    result = CliRunner().invoke(app, [*shlex.split(line)[1:], *FASTER.get(line, [])])
    assert result.exit_code == 0, f"`{line}` exited {result.exit_code}: {result.output[-2000:]}"
    assert RUN[line] in result.output, result.output[-2000:]
    if "--json" in line:
        assert json.loads(result.output[result.output.index("{"):])["passed"] is True
    if line == SOFTMAX:
        assert re.search(r"speedup \d", result.output), result.output[-2000:]
