"""`evokernel verify`: run one candidate kernel through the verifier's gates.

Exit codes: 0 every gate passed, 1 a gate failed, 2 usage or infrastructure error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from cli import inputs
from cli.errors import EXIT_FAILED, EXIT_OK, fail, one_line_errors
from cli.inputs import InputError
from verifier.settings import VerifySettings

_DEFAULTS = VerifySettings()  # the help names the verifier's own defaults (a light import: no torch)


def register(app: typer.Typer) -> None:
    @app.command("verify")
    def verify_command(
        build: Path = typer.Option(..., "--build", help="benchmark build directory (manifest.parquet)"),
        task: str = typer.Option(..., "--task", help="task id in the build, e.g. L1/001_relu (bundled) or "
                                 "KB-L1/19_ReLU (a KernelBench checkout); `evokernel build --list` lists them"),
        candidate: Path = typer.Option(..., "--candidate", help="candidate Python file (class ModelNew)"),
        backend: Optional[str] = typer.Option(None, "--backend", help="the build's backend (a check: another "
                                               "backend is refused; default: the build's)"),
        threads: int = typer.Option(2, "--threads", min=1, help="thread budget for candidate and reference"),
        rounds: int = typer.Option(30, "--rounds", min=1, help="paired latency rounds at most: after "
                                   f"{_DEFAULTS.settle_rounds} the gate ends once the speedup's 95% CI is within "
                                   "--settle-ci"),
        settle_ci: float = typer.Option(_DEFAULTS.settle_ci, "--settle-ci", min=0.0, help="half the CI's width (log "
                                        f"terms, {_DEFAULTS.settle_ci}: +-{_DEFAULTS.settle_ci:.1%}) that ends the "
                                        "latency rounds early; 0: play every round"),
        as_json: bool = typer.Option(False, "--json", help="print the verdict as one JSON object"),
    ) -> None:
        """Verify CANDIDATE against TASK: hack -> compile -> correctness -> latency."""
        with one_line_errors(InputError):  # every input, before the verifier is imported
            found = inputs.build(build)
            spec = inputs.task(found, task)
            source = inputs.candidate_source(candidate)
            chosen = inputs.build_backend(found, inputs.backend(backend)) if backend else spec.variant
        from verifier.api import verify

        with one_line_errors(ValueError):
            settings = VerifySettings(threads=threads, latency_rounds=rounds, settle_ci=settle_ci)
        verdict = verify(spec, source, chosen, settings)
        if as_json:
            typer.echo(json.dumps(verdict.to_json_dict(), indent=2))
        else:
            typer.echo(verdict.feedback)
            for warning in verdict.warnings:  # e.g. "isolation unavailable: ..." (for the user, not the LLM)
                typer.echo(f"warning: {warning}", err=True)
            if verdict.latency is not None and verdict.latency.time is not None:  # for the user, not the LLM
                typer.echo(f"note: the latency gate took {verdict.gate('latency').seconds:.1f} s: "
                           f"{verdict.latency.time.line()}", err=True)
        if verdict.infrastructure_error:
            if not as_json:
                fail(verdict.infrastructure_error.splitlines()[0])
            raise typer.Exit(2)
        raise typer.Exit(EXIT_OK if verdict.passed else EXIT_FAILED)
