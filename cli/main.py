"""Entry point of the `evokernel` console script.

Each command lives in its own module (``cli/<name>_cmd.py``) exposing ``register(app)``;
this module only assembles them and keeps start-up cheap (heavy imports happen inside commands).
"""

from __future__ import annotations

from importlib import import_module

import typer

app = typer.Typer(
    name="evokernel",
    help="LLM-driven kernel synthesis with a value-driven memory: build benchmarks, verify kernels, "
    "run campaigns, query the memory lake, write reports.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

COMMAND_MODULES = (
    "config_cmd",
    "verify_cmd",
    "llm_cmd",
    "build_cmd",
    "report_cmd",
    "lake_cmd",
    "backends_cmd",
    "campaign_cmd",
    "experiment_cmd",
    "demo_cmd",
    "toolchain_cmd",
    "prompt_cmd",
    "cuda_headers_cmd",  # after toolchain_cmd: adds to its `toolchain` group
)

for _name in COMMAND_MODULES:
    import_module(f"cli.{_name}").register(app)


if __name__ == "__main__":  # pragma: no cover
    app()
