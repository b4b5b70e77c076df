"""Creating, recording and launching one toolchain environment (see :mod:`verifier.toolchains`).

Install: under an exclusive lock (two test workers or two shells may race), a fresh
``venv --without-pip`` is made next to the target, the main environment's pip installs the
pinned wheels into it (``pip --python``; ``--no-deps``, since the toolchain wheels either
declare nothing or would pull a second torch), a ``.pth`` line links the main environment, the
spec's finish hook runs, and the spec's probe (run *inside* the new environment) must print its
versions. Only then is ``toolchain.json`` written and the directory renamed into place, so a
half-made environment is never found. Every failure is a :class:`ToolchainError` with one line.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import site
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import import_module
from pathlib import Path
from typing import Callable

from verifier.toolchains import InstalledToolchain, ToolchainError, ToolchainSpec, install_command

MANIFEST = "toolchain.json"
MAIN_SITE_VARIABLE = "EVOKERNEL_MAIN_SITE"
PTH_NAME = "zz-evokernel-main-env.pth"  # sorts after the toolchain's own .pth files
# Appends the launching environment's site-packages *after* the toolchain's own (addsitedir
# appends and also runs the .pth files there, e.g. an editable install's finder).
# (map, not a comprehension: site executes the line with exec, where a comprehension's scope
# cannot see the names it imports)
PTH_LINE = ("import os, site; list(map(site.addsitedir, filter(None, os.environ.get('" + MAIN_SITE_VARIABLE
            + "', '').split(os.pathsep))))\n")
PIP_TIMEOUT_S = 900.0


def main_site_dirs() -> tuple[str, ...]:
    """The site-packages of the running (main) environment."""
    return tuple(p for p in site.getsitepackages() if Path(p).is_dir())


def launch_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for running a toolchain's python: links this process's site-packages."""
    env = dict(os.environ if base is None else base)
    env[MAIN_SITE_VARIABLE] = os.pathsep.join(main_site_dirs())
    env.pop("PYTHONPATH", None)  # a path entry before site-packages could put upstream triton first
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _python_tag() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def read_manifest(name: str, root: Path) -> InstalledToolchain | None:
    path = root / MANIFEST
    if not path.is_file():
        return None
    reinstall = f"reinstall with `{install_command(name)} --force`"
    try:
        data = json.loads(path.read_text())
        found = InstalledToolchain(name, root, dict(data["versions"]), str(data["python"]),
                                   float(data["install_seconds"]), int(data["size_bytes"]), str(data["installed_at"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ToolchainError(f"toolchain {name} at {root} is broken ({path.name}: {exc}); {reinstall}") from None
    if not found.python_executable.exists():
        raise ToolchainError(f"toolchain {name} at {root} is broken (bin/python is missing); {reinstall}")
    if found.python != _python_tag():
        raise ToolchainError(f"toolchain {name} at {root} was made for Python {found.python}, this is "
                             f"Python {_python_tag()}; {reinstall}")
    return found


def install_environment(spec: ToolchainSpec, root: Path, force: bool,
                        progress: Callable[[str], None] | None = None) -> InstalledToolchain:
    say = progress or (lambda message: None)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{spec.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not force:
            try:
                existing = read_manifest(spec.name, root)
            except ToolchainError:
                existing = None
            if existing is not None and _pins_match(spec, existing):
                say(f"{spec.name} is already installed at {root}")
                return existing
        return _build(spec, root, say)


def _pins_match(spec: ToolchainSpec, found: InstalledToolchain) -> bool:
    pins = dict(r.split("==", 1) for r in spec.requirements)
    return all(found.versions.get(pkg) == version for pkg, version in pins.items() if pkg in found.versions)


def _build(spec: ToolchainSpec, root: Path, say: Callable[[str], None]) -> InstalledToolchain:
    start = time.perf_counter()
    partial = root.parent / f".{spec.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        say(f"creating the {spec.name} environment")
        _run([sys.executable, "-m", "venv", "--without-pip", str(partial)], "creating the virtual environment", 300)
        say(f"installing {' '.join(spec.requirements)} (pinned, --no-deps)")
        _run([sys.executable, "-m", "pip", "--python", str(partial / "bin" / "python"), "install", "--no-deps",
              "--no-input", "--disable-pip-version-check", "--progress-bar", "off", *spec.requirements],
             f"pip could not install {', '.join(spec.requirements)}", PIP_TIMEOUT_S)
        site_dir = _site_packages(partial)
        (site_dir / PTH_NAME).write_text(PTH_LINE)
        if spec.finish:
            module_name, _, function = spec.finish.partition(":")
            getattr(import_module(module_name), function)(partial)
        say("checking the new environment")
        probe = _run([str(partial / "bin" / "python"), "-c", spec.probe], "the installed toolchain does not import",
                     300, env=launch_env())
        versions = json.loads(probe.stdout.strip().splitlines()[-1])
        size = _tree_bytes(partial)
        manifest = {"name": spec.name, "versions": versions, "python": _python_tag(),
                    "install_seconds": round(time.perf_counter() - start, 1), "size_bytes": size,
                    "installed_at": datetime.now(timezone.utc).isoformat(), "requirements": list(spec.requirements)}
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        _replace(partial, root)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    found = read_manifest(spec.name, root)
    assert found is not None
    say(found.line())
    return found


def _run(argv: list[str], what: str, timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{what}: timed out after {timeout_s:.0f} s") from None
    except OSError as exc:
        raise ToolchainError(f"{what}: {exc}") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + "\n" + done.stdout).splitlines()
                 if ln.strip() and not ln.startswith("WARNING: Location")]
        errors = [ln for ln in lines if "error" in ln.lower()]
        raise ToolchainError(f"{what}: {(errors or lines or ['exit code %d' % done.returncode])[-1].strip()}")
    return done


def _site_packages(env_root: Path) -> Path:
    found = sorted(env_root.glob("lib/python*/site-packages"))
    if not found:
        raise ToolchainError(f"no site-packages in the new environment {env_root}")
    return found[0]


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total


def _replace(partial: Path, root: Path) -> None:
    old = root.parent / f".{root.name}.old-{os.getpid()}"
    if root.exists():
        root.rename(old)
    partial.rename(root)
    shutil.rmtree(old, ignore_errors=True)
