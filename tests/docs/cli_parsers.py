"""Parse a documented command line with the parser of the program it runs, without running it.

``evokernel`` lines go through the click command behind the Typer app (an unknown command or option,
or a value a typed option cannot take, is an error); ``prefect`` and ``dask`` lines through their own
click/Typer commands; ``python -m benchmarks.NAME`` through the options the module's argparse parser
declares (read from its source: importing a benchmark imports torch); ``make TARGET`` through the
Makefile's targets.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = "..."  # "evokernel campaign ... --llm X": the rest of the line as shown before


class DocCommandError(AssertionError):
    """A documented command its program would refuse (the message says why)."""


def parse_click(command, name: str, args: list[str], partial: bool) -> list[str]:
    """Parse ``args`` as ``command`` would, descending into subcommands; returns the command path.

    ``command`` is a click command, or a Typer one (Typer ships its own copy of click, so classes and
    exceptions are recognised by name). ``partial``: the line leaves arguments out (an inline fragment,
    or ``...``), so a missing required parameter is not an error; every command and option shown must
    still exist and take the value shown."""
    try:
        ctx = command.make_context(name, list(args), resilient_parsing=False)
    except Exception as exc:  # noqa: BLE001 - click's and Typer's click's exceptions alike
        if _is(exc, "Exit"):  # an eager option such as --help
            return [name]
        if partial and (_is(exc, "MissingParameter") or _is(exc, "NoArgsIsHelpError")):
            ctx = command.make_context(name, list(args), resilient_parsing=True)
        elif partial and _is(exc, "BadOptionUsage") and args and args[-1].startswith("--"):
            return parse_click(command, name, [*args, "VALUE"], partial)  # `--as-of` shown without its value
        elif _is(exc, "UsageError"):
            raise DocCommandError(f"{name}: {exc.format_message()}") from exc
        else:
            raise
    if not hasattr(command, "resolve_command"):
        return [name]
    rest = [*ctx._protected_args, *ctx.args]  # a group leaves its subcommand's name and arguments
    if not rest:
        return [name]
    try:
        sub_name, sub, sub_args = command.resolve_command(ctx, rest)
    except Exception as exc:  # noqa: BLE001
        if _is(exc, "UsageError"):
            raise DocCommandError(f"{name}: {exc.format_message()}") from exc
        raise
    return [name, *parse_click(sub, sub_name, sub_args, partial)]


def _is(exc: BaseException, class_name: str) -> bool:
    return any(cls.__name__ == class_name for cls in type(exc).__mro__)


def evokernel_command() -> click.Command:
    import typer

    from cli.main import app

    return typer.main.get_command(app)


def prefect_command() -> click.Command:
    import typer
    from prefect.cli import app

    return typer.main.get_command(app)


def dask_command(sub: str) -> click.Command:
    """The click command behind ``dask scheduler`` / ``dask worker`` (distributed's CLI)."""
    if sub == "scheduler":
        from distributed.cli.dask_scheduler import main
    elif sub == "worker":
        from distributed.cli.dask_worker import main
    else:
        raise DocCommandError(f"dask: this check knows `dask scheduler` and `dask worker`, not {sub!r}")
    return main


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w.-]*):", text, flags=re.M))


def benchmark_options(module: str) -> set[str]:
    """The ``--options`` a benchmark module's argparse parser declares (``benchmarks.x`` or a package's
    ``__main__``), read from its source."""
    path = ROOT / Path(*module.split("."))
    source = path / "__main__.py" if path.is_dir() else path.with_suffix(".py")
    if not source.is_file():
        raise DocCommandError(f"python -m {module}: no such module ({source.relative_to(ROOT)})")
    options: set[str] = set()
    for file in ([source] if source.name != "__main__.py" else sorted(source.parent.glob("*.py"))):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                options |= {arg.value for arg in node.args
                            if isinstance(arg, ast.Constant) and str(arg.value).startswith("-")}
    return options | {"-h", "--help"}


def check_benchmark(module: str, args: list[str]) -> None:
    declared = benchmark_options(module)
    unknown = [a.split("=")[0] for a in args if a.startswith("-") and a.split("=")[0] not in declared]
    if unknown:
        raise DocCommandError(f"python -m {module}: no option {', '.join(unknown)} "
                              f"(it has {', '.join(sorted(declared))})")

