"""Toolchain environments: compilers that cannot live in the project's own environment.

Some kernel toolchains clash with the main environment: triton-ascend installs itself as the
package ``triton`` and would replace upstream Triton (which the dev extra and the ``triton``
backend need). Such a toolchain gets its own virtual environment under the user cache
(``$XDG_CACHE_HOME/evokernel/toolchains/<name>``; ``~/.cache`` when XDG_CACHE_HOME is unset),
created by ``evokernel toolchain install NAME`` from pinned wheels, and is only ever run as a
subprocess: nothing of it is imported into the main process.

The environment reuses the main environment's packages (torch above all: no second copy of
~1 GB) through a ``.pth`` file that *appends* the main environment's site-packages after the
toolchain's own, so the toolchain's ``triton`` shadows upstream's while ``import torch`` finds
the project's. Which main environment is appended is decided by whoever launches the toolchain
(``EVOKERNEL_MAIN_SITE``, see :func:`verifier.toolchains.env.launch_env`), so several checkouts
with their own virtual environments can share one installed toolchain.

This module owns the registry of known toolchains (name -> spec, resolved lazily so listing them
imports no backend) and the public entry points; :mod:`verifier.toolchains.env` does the work.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from verifier.settings import user_cache

# name -> "module:attribute" of its ToolchainSpec (the backend that needs the toolchain owns it)
_REGISTRY = {"triton-ascend": "verifier.backends.triton_ascend.toolchain:SPEC"}


class ToolchainError(RuntimeError):
    """A toolchain cannot be installed or is broken; the message is one line for the user."""


@dataclass(frozen=True)
class ToolchainSpec:
    """What one toolchain environment is made of."""

    name: str
    summary: str  # one line for `evokernel toolchain list`
    requirements: tuple[str, ...]  # pinned "pkg==version", installed with --no-deps
    probe: str  # Python code run in the new environment; must print a JSON object of versions
    finish: str = ""  # "module:function(env_root: Path) -> None" run after the wheels are in


@dataclass(frozen=True)
class InstalledToolchain:
    """An installed toolchain, as recorded in its ``toolchain.json`` at install time."""

    name: str
    root: Path
    versions: dict  # package -> version, from the probe
    python: str  # "3.11", the interpreter version the environment was made for
    install_seconds: float
    size_bytes: int
    installed_at: str  # ISO date-time

    @property
    def python_executable(self) -> Path:
        return self.root / "bin" / "python"

    def line(self) -> str:
        versions = ", ".join(f"{k} {v}" for k, v in self.versions.items())
        return (f"{self.name}: {versions}; {self.size_bytes / 2**20:.0f} MiB at {self.root} "
                f"(installed {self.installed_at[:19]} in {self.install_seconds:.0f} s)")


def toolchains_root() -> Path:
    # (no EVOKERNEL_* variable: evokernel's settings reject unknown variables with that prefix)
    return user_cache("toolchains")


def install_command(name: str) -> str:
    return f"evokernel toolchain install {name}"


def toolchain_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def spec_for(name: str) -> ToolchainSpec:
    if name not in _REGISTRY:
        raise ToolchainError(f"unknown toolchain {name!r} (known: {', '.join(_REGISTRY)})")
    module_name, _, attribute = _REGISTRY[name].partition(":")
    return getattr(import_module(module_name), attribute)


def installed(name: str, root: Path | None = None) -> InstalledToolchain | None:
    """The installed toolchain ``name`` or None; raises ToolchainError when it is broken."""
    from verifier.toolchains.env import read_manifest

    return read_manifest(name, (root or toolchains_root()) / name)


def install(name: str, force: bool = False, root: Path | None = None, progress=None) -> InstalledToolchain:
    """Create (or with force, recreate) the environment of toolchain ``name``."""
    from verifier.toolchains.env import install_environment

    return install_environment(spec_for(name), (root or toolchains_root()) / name, force, progress)
