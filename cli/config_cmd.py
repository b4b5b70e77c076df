"""`evokernel config`: print the effective settings (env, config file, defaults)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from cli import inputs
from cli.errors import one_line_errors
from cli.inputs import InputError


def register(app: typer.Typer) -> None:
    @app.command("config")
    def config(config_file: Optional[Path] = typer.Option(None, "--config", help="TOML settings file")) -> None:
        """Print the effective settings as JSON (unknown keys are errors)."""
        with one_line_errors(InputError):
            settings = inputs.settings(config_file)
        typer.echo(json.dumps(settings.model_dump(mode="json"), indent=2))
