"""`evokernel llm`: check a provider spec with one real call, and show the price table."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli import inputs
from cli.errors import one_line_errors
from cli.inputs import InputError
from evokernel.config import ConfigError

CHECK_PROMPT = "Reply with the single word: ready"


def register(app: typer.Typer) -> None:
    llm_app = typer.Typer(help="LLM providers: check a spec with one call, show prices.", no_args_is_help=True)
    app.add_typer(llm_app, name="llm")

    @llm_app.command("check")
    def check(
        llm: Optional[str] = typer.Option(None, "--llm", help="provider spec, e.g. openai:gpt-4o (default: settings)"),
        prompt: str = typer.Option(CHECK_PROMPT, "--prompt", help="the user prompt to send"),
        task_id: str = typer.Option("check", "--task-id", help="task id (scripted providers key on it)"),
        stage: str = typer.Option("draft", "--stage", help="draft | refine | distill"),
        max_output_tokens: int = typer.Option(64, "--max-output-tokens", min=1),
        config_file: Optional[Path] = typer.Option(None, "--config", help="TOML settings file"),
    ) -> None:
        """Send one request through SPEC (with the retry policy) and print the accounting."""
        from evokernel.llm import LLMError, LLMRequest
        from evokernel.llm.pricing import PriceTableError

        with one_line_errors(InputError):
            settings = inputs.settings(config_file, llm=llm)
            provider = inputs.llm(settings.llm, settings, flag="--llm" if llm else "llm setting")
        with one_line_errors(ConfigError, LLMError, PriceTableError, ValueError):
            done = provider.complete(LLMRequest(system="You are a terse assistant.", prompt=prompt,
                                                task_id=task_id, stage=stage, max_output_tokens=max_output_tokens,
                                                temperature=settings.llm_temperature))
        cost = f"${done.cost_usd:.6f}" if done.cost_known else "$0 (model not in the price table; set LLM_PRICES)"
        tokens = " (estimated)" if done.tokens_estimated else ""
        typer.echo(f"spec: {provider.spec}\nmodel: {done.model}\nfinish_reason: {done.finish_reason}\n"
                   f"tokens: {done.input_tokens} in, {done.output_tokens} out{tokens}\ncost: {cost}\n"
                   f"seconds: {done.seconds:.2f} ({done.retries} retries)\ntext: {done.text[:500]}")

    @llm_app.command("prices")
    def prices() -> None:
        """Print the price table (USD per 1M input/output tokens), LLM_PRICES overrides applied."""
        from evokernel.llm.pricing import PriceTableError, load_price_table

        with one_line_errors(PriceTableError):
            table = load_price_table()
        for model, price in sorted(table.prices.items()):
            typer.echo(f"{model:<24} {price.input_per_mtok:>8.2f} {price.output_per_mtok:>8.2f}")
