"""`evokernel toolchain`: install and list the toolchains that live in their own environments.

``evokernel toolchain install NAME [--force]`` creates the pinned environment under the user cache
(see :mod:`verifier.toolchains`); ``evokernel toolchain list [--json]`` shows every known toolchain,
installed (with versions, size and install time) or not (with the command that installs it).
"""

from __future__ import annotations

import json
from typing import Optional

import typer

from cli.errors import fail


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Toolchains that live in their own environments (e.g. triton-ascend).",
                        no_args_is_help=True)
    app.add_typer(group, name="toolchain")

    @group.command("install")
    def install(
        name: str = typer.Argument(..., help="toolchain name, e.g. triton-ascend"),
        force: bool = typer.Option(False, "--force", help="recreate it even if it is installed"),
    ) -> None:
        """Create the toolchain's environment from pinned wheels (PyPI); prints progress."""
        from verifier.toolchains import ToolchainError
        from verifier.toolchains import install as install_toolchain

        try:
            install_toolchain(name, force=force, progress=typer.echo)
        except ToolchainError as exc:
            fail(str(exc).splitlines()[0])

    @group.command("list")
    def list_command(as_json: bool = typer.Option(False, "--json", help="print JSON instead of lines"),
                     name: Optional[str] = typer.Argument(None, help="only this toolchain")) -> None:
        """Known toolchains: installed ones with versions and size, the others with the install command."""
        from verifier.toolchains import ToolchainError, install_command, installed, spec_for, toolchain_names

        rows = []
        for known in [name] if name else toolchain_names():
            try:
                spec = spec_for(known)
                found = installed(known)
            except ToolchainError as exc:
                rows.append({"name": known, "installed": False, "problem": str(exc)})
                continue
            if found is None:
                rows.append({"name": known, "installed": False, "summary": spec.summary,
                             "problem": f"not installed (run `{install_command(known)}`)"})
            else:
                rows.append({"name": known, "installed": True, "summary": spec.summary, "path": str(found.root),
                             "versions": found.versions, "size_bytes": found.size_bytes,
                             "install_seconds": found.install_seconds, "installed_at": found.installed_at,
                             "line": found.line()})
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        for row in rows:
            typer.echo(row["line"] if row["installed"] else f"{row['name']}: {row['problem']}")
