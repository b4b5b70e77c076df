"""How the CLI reports failures: one line on stderr and a documented exit code.

Exit codes: 0 success, 1 a negative result (e.g. a gate failed), 2 usage or infrastructure error.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import typer

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def fail(message: str, code: int = EXIT_USAGE) -> None:
    """Print one line to stderr and exit with ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@contextmanager
def one_line_errors(*error_types: type[BaseException]) -> Iterator[None]:
    """Turn the given (expected, user-facing) exception types into a one-line error, exit 2."""
    try:
        yield
    except error_types as exc:  # type: ignore[misc]
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
