"""`evokernel toolchain fetch-cuda-headers`: torch's CUDA include tree for the cuda compile gate.

Registered under the ``toolchain`` group that cli/toolchain_cmd.py creates, beside ``toolchain
install`` / ``list``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.errors import fail


def _toolchain_group(app: typer.Typer) -> typer.Typer:
    for info in app.registered_groups:
        if info.name == "toolchain" and info.typer_instance is not None:
            return info.typer_instance
    raise RuntimeError("cli.main must list toolchain_cmd before cuda_headers_cmd")


def register(app: typer.Typer) -> None:
    group = _toolchain_group(app)

    @group.command("fetch-cuda-headers")
    def fetch_cuda_headers(
        wheel: Optional[Path] = typer.Option(None, "--wheel", help="use this CUDA torch wheel instead of downloading",
                                             exists=True, dir_okay=False),
        force: bool = typer.Option(False, "--force", help="fetch again even if the headers are there"),
    ) -> None:
        """Fetch torch's CUDA headers (same version as the local torch) for the cuda compile gate.

        Downloads the CUDA wheel of the local torch version once (~530 MB, pip), keeps only
        torch/include (~39 MB) in the user cache and deletes the wheel."""
        from verifier.backends.cuda_headers import HeaderFetchError, fetch

        try:
            tree = fetch(progress=typer.echo, wheel=wheel, force=force)
        except HeaderFetchError as exc:
            fail(str(exc).splitlines()[0])
        typer.echo(f"ok: torch {tree.torch_version} (CUDA {tree.cuda_version}) headers in {tree.include}")
