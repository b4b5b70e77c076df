"""`evokernel backends`: each backend's availability on this machine and what each gate can do."""

from __future__ import annotations

import json

import typer


def register(app: typer.Typer) -> None:
    @app.command("backends")
    def backends(as_json: bool = typer.Option(False, "--json", help="print JSON instead of lines")) -> None:
        """List backends: available or why not, and per gate (compile, correctness, latency) yes/no."""
        from verifier.backends import backend_names, get_backend

        rows = []
        for name in backend_names():
            try:
                rows.append(get_backend(name).availability())
            except Exception as exc:  # an optional backend that cannot even be imported
                rows.append(None)
                typer.echo(f"{name}: unavailable: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            if not as_json:
                typer.echo(rows[-1].line())
        if as_json:
            typer.echo(json.dumps([{"backend": a.backend, "available": a.available, "reason": a.reason,
                                    "gates": {g.gate: {"available": g.available, "note": g.note} for g in a.gates}}
                                   for a in rows if a is not None], indent=2))
