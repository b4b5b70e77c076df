"""`evokernel build`: build a benchmark (bundled problems plus any KernelBench checkouts) for a backend.

Prints progress lines, then the build hash as the last line of stdout. ``--list`` and
``--explain TASK_ID`` build nothing: they read the build at ``--out``; ``--list`` prints its task
ids with level, category and lint status (the ids every other command takes), ``--explain`` one
task (original vs adapted sizes, tolerance, how it was linted, the verdict and its reason, and for
the NPU backends which gates run on the build machine for it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional

import typer

from cli import inputs
from cli.errors import fail, one_line_errors
from cli.inputs import InputError
from cli.inputs_out import output_dir


def parse_levels(text: str) -> tuple[int, ...]:
    """"1,2,3" -> (1, 2, 3); a one-line error for anything else."""
    try:
        levels = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        fail(f"--levels: {text!r} is not a comma-separated list of levels 1..4")
    if not levels or any(level not in (1, 2, 3, 4) for level in levels):
        fail(f"--levels: {text!r} must name levels between 1 and 4")
    return levels


def register(app: typer.Typer) -> None:
    @app.command("build")
    def build(
        backend: str = typer.Option("cpu", "--backend", help="cpu | cuda | triton | ascendc | triton-ascend"),
        source: Optional[List[Path]] = typer.Option(None, "--source", help="a KernelBench checkout or folder of problems (repeatable)"),
        levels: str = typer.Option("1,2,3", "--levels", help="comma-separated levels, e.g. 1,2"),
        out: Optional[Path] = typer.Option(None, "--out", help="build directory (default runs/build-<backend>)"),
        dtype: Optional[List[str]] = typer.Option(None, "--dtype", help="fp32 (default), fp16, bf16; repeatable"),
        no_bundled: bool = typer.Option(False, "--no-bundled", help="leave out the bundled problems"),
        quiet: bool = typer.Option(False, "--quiet", help="print only the summary and the hash"),
        explain: Optional[str] = typer.Option(None, "--explain", metavar="TASK_ID",
                                              help="print one task of the build at --out instead of building, "
                                              "e.g. L1/001_relu (bundled) or KB-L1/19_ReLU (KernelBench)"),
        list_tasks: bool = typer.Option(False, "--list", help="list the task ids of the build at --out (level, "
                                        "category, lint status) instead of building"),
    ) -> None:
        """Load, size, lint and validate problems; write manifest.parquet, problems/, build.json."""
        if list_tasks or explain is not None:
            with one_line_errors(InputError):
                found = inputs.build(out or Path(f"runs/build-{backend}"), flag="--out")
                if explain is not None:
                    inputs.task(found, explain, flag="--explain")
            typer.echo(task_list(found) if list_tasks else explain_task_cmd(found.root, explain))
            return
        from kernelbench_npu.build import build_benchmark
        from kernelbench_npu.loader import ProblemError
        from kernelbench_npu.validate import ManifestValidationError
        from kernelbench_npu.variants import VariantError

        chosen = parse_levels(levels)
        target = out or Path(f"runs/build-{backend}")
        with one_line_errors(InputError):
            output_dir(target, holds="a build (manifest.parquet, problems/, build.json)")
        dtypes = [d for item in dtype or [] for d in item.split(",") if d]
        progress = None if quiet else (lambda message: typer.echo(message))
        try:
            summary = build_benchmark(backend, sources=tuple(source or ()), levels=chosen, out=target,
                                      progress=progress, include_bundled=not no_bundled, dtypes=dtypes or None,
                                      judge=backend_judge(backend))
        except (ProblemError, VariantError, ManifestValidationError) as exc:
            fail(str(exc).splitlines()[0])
        typer.echo(f"built {summary.out}: {summary.ok} ok, {summary.quarantined} quarantined, "
                   f"{len(summary.load_errors)} files skipped, {summary.seconds:.1f} s")
        typer.echo(summary.build_hash)


def backend_judge(backend: str):
    """The verifier backend's check of each ok task's verification path on this machine (the NPU
    backends; None for the others), shown by ``--explain`` (kernelbench_npu.judge)."""
    if backend == "triton-ascend":
        from verifier.backends.triton_ascend.judge import judge_tasks

        return judge_tasks
    if backend == "ascendc":
        from verifier.backends.ascendc.judge import judge_tasks

        return judge_tasks
    return None


def explain_task_cmd(build: Path, task_id: str) -> str:
    from kernelbench_npu.explain import explain_task
    from kernelbench_npu.spec import BuildError

    with one_line_errors(BuildError):
        return explain_task(build, task_id)


def natural_key(task_id: str) -> list:
    """Numbers in an id compare as numbers: KB-L1/2_ before KB-L1/10_ before KB-L1/100_."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", task_id)]


def task_list(build) -> str:
    """One line per task, by level then id (numbers as numbers): level, category, lint status, the id
    (last: ids run to 100 characters in a KernelBench checkout, and no column is padded to them) and a
    quarantined task's reason; then a count and the build's hash."""
    tasks = sorted(build.tasks, key=lambda t: (t.level, natural_key(t.task_id)))
    category = max([len("category")] + [len(t.category) for t in tasks])
    lint = max([len("lint")] + [len(t.lint_status) for t in tasks])
    lines = [f"level  {'category':{category}}  {'lint':{lint}}  task"]
    for t in tasks:
        reason = f"  ({t.lint_reason})" if t.quarantined and t.lint_reason else ""
        lines.append(f"{t.level:>5}  {t.category:{category}}  {t.lint_status:{lint}}  {t.task_id}{reason}")
    runnable = len(build.runnable())
    lines.append(f"{len(build.tasks)} tasks ({runnable} ok, {len(build.tasks) - runnable} quarantined) in "
                 f"{build.root}, backend {build.backend}, hash {build.build_hash}")
    return "\n".join(lines)
