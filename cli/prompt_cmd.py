"""`evokernel prompt`: print the exact prompt the model would get for a task's next step, with the
size of each section (built by the campaign's own prepare_step; the lake is only read)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli import inputs, inputs_lake
from cli.errors import one_line_errors
from cli.inputs import InputError


def register(app: typer.Typer) -> None:
    @app.command("prompt")
    def prompt(
        build: Path = typer.Option(..., "--build", help="benchmark build directory (evokernel build)"),
        task: str = typer.Option(..., "--task", help="task id in the build, e.g. L1/001_relu (bundled) or "
                                 "KB-L1/19_ReLU (KernelBench); `evokernel build --list` lists them"),
        lake: Path = typer.Option(..., "--lake", help="memory lake directory (read only; need not exist)"),
        stage: Optional[int] = typer.Option(None, "--stage", help="1 drafting | 2 refining (default: 1, or the campaign's)"),
        campaign_id: Optional[str] = typer.Option(None, "--campaign-id", help="show this campaign's next step on the task"),
        method: Optional[str] = typer.Option(None, "--method", help="evokernel | pass-at-k | refinement | heuristic | no-memory"),
        sizes_only: bool = typer.Option(False, "--sizes-only", help="print the section sizes without the prompt"),
        config_file: Optional[Path] = typer.Option(None, "--config", help="TOML settings file"),
    ) -> None:
        """Show what the model would be sent: system and user prompt, then the section sizes."""
        with one_line_errors(InputError):  # every input, before the lake is read
            if stage is not None:
                inputs.choice("--stage", str(stage), ("1", "2"))
            settings = inputs.settings(config_file, build=build, lake=lake, method=method)
            found = inputs.build(settings.build)
            inputs.settings_backend(settings, found)
            inputs.task(found, task)
            inputs_lake.campaign_lake(str(settings.lake), found.backend)
        from evokernel.agent.preview import PreviewError, preview_step
        from evokernel.agent.runtime import CampaignError
        from kernelbench_npu.spec import BuildError
        from memory_lake.errors import LakeError

        with one_line_errors(BuildError, CampaignError, PreviewError, LakeError, ValueError):
            preview = preview_step(settings, task, stage, campaign_id)
        request = preview.plan.request
        typer.echo(f"# {task}, stage {preview.plan.stage} ({request.stage}): {preview.origin}")
        if not sizes_only:
            typer.echo(_rule(f"system ({len(request.system):,} characters)") + "\n" + request.system)
            typer.echo(_rule(f"user ({len(request.prompt):,} characters)") + "\n" + request.prompt)
        typer.echo(_rule("sections") + "\n" + size_table(preview.plan.prompt_sections))


def _rule(title: str) -> str:
    return f"\n{'=' * 8} {title} {'=' * max(8, 70 - len(title))}"


def size_table(sections) -> str:
    """One line per section: characters, estimated tokens, budget, what was cut or collapsed."""
    lines = [f"{'section':22} {'chars':>7} {'~tokens':>8} {'budget':>8}  cut / items"]
    for s in sections:
        budget = f"{s.budget_chars:,}" if s.budget_chars is not None else "-"
        notes = []
        if s.items_shown or s.items_collapsed or s.items_left_out:
            notes.append(f"{s.items_shown} shown, {s.items_collapsed} repeat(s) collapsed, "
                         f"{s.items_left_out} left out")
        if s.cut_chars:
            notes.append(f"{s.cut_chars:,} characters cut")
        lines.append(f"{s.name:22} {s.chars:>7,} {s.tokens:>8,} {budget:>8}  {'; '.join(notes)}")
    total = sum(s.chars for s in sections)
    lines.append(f"{'total':22} {total:>7,} {total // 4:>8,}")
    return "\n".join(lines)
