"""The triton-ascend toolchain: its pinned environment, where its tools are, and which SoC it targets.

Pins (research/backends.md §1.3, re-checked here): ``triton-ascend==3.2.0`` (a Triton 3.2 fork that
installs as ``triton``; CANN 8.5.0 is its documented partner), ``ascendnpu-ir==1.2.0``
(``bishengir-compile``: the HFusion/HIVM pipeline, x86 binaries needing only libc/libz/libstdc++)
and ``pybind11`` (imported by triton-ascend without being declared). The environment is made by
:mod:`verifier.toolchains` (``evokernel toolchain install triton-ascend``).

CANN's ``hivmc`` turns the HIVM module into the NPU binary. bishengir-compile first asks
``hivmc --version`` and stops before the checks that matter when there is none, so the
environment carries a stand-in ``evokernel-bin/hivmc``: it answers ``--version``, copies the HIVM
module it is handed to ``$EVOKERNEL_HIVM_DUMP`` and exits 1 (bishengir then reports "External
hivmc run fails"). Reaching it means the whole HIVM pipeline (UB/L1 planning, sync insertion,
legality checks) passed. Where CANN's real ``hivmc`` is found, the stand-in is not used and the
compile goes on to an NPU binary (not exercised here: no CANN on this machine).

The target SoC is ``$TRITON_ASCEND_ARCH`` (triton-ascend's own variable), else CANN's
``SOC_VERSION``, else Ascend910B2 (the
SoC MultiKernelBench's Ascend runs use: 192 KB Unified Buffer, 512 KB L1 per AI core).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from verifier.backends.ascendc.toolchain import DEFAULT_SOC, locate_cann
from verifier.toolchains import InstalledToolchain, ToolchainError, ToolchainSpec, install_command, installed

NAME = "triton-ascend"
INSTALL_COMMAND = install_command(NAME)
PROBE = ("import json, subprocess, importlib.metadata as m, pathlib, torch, triton, triton.backends.ascend.compiler, ascendnpuir;"
         "b = pathlib.Path(ascendnpuir.__file__).parent / 'bin' / 'bishengir-compile';"
         "v = subprocess.run([str(b), '--version'], capture_output=True, text=True, check=True).stdout.split()[1];"
         "print(json.dumps({'triton-ascend': m.version('triton-ascend'), 'ascendnpu-ir': m.version('ascendnpu-ir'),"
         " 'bishengir-compile': v, 'pybind11': m.version('pybind11')}))")
SPEC = ToolchainSpec(
    name=NAME,
    summary="Triton for Ascend NPUs: triton-ascend front end + bishengir-compile HIVM pipeline (x86, no CANN)",
    requirements=("triton-ascend==3.2.0", "ascendnpu-ir==1.2.0", "pybind11==3.1.0"),
    probe=PROBE,
    finish="verifier.backends.triton_ascend.toolchain:write_hivmc_stand_in",
)
STAND_IN = """#!/bin/sh
# EvoKernel's stand-in for CANN's hivmc (CANN is not installed): see
# verifier/backends/triton_ascend/toolchain.py. Reaching it means the HIVM pipeline passed.
if [ "$1" = "--version" ]; then echo "hivmc (EvoKernel stand-in; CANN not installed)"; exit 0; fi
for arg in "$@"; do
  case "$arg" in *.mlir) [ -n "$EVOKERNEL_HIVM_DUMP" ] && cp "$arg" "$EVOKERNEL_HIVM_DUMP"; break;; esac
done
echo "evokernel: hivmc stand-in reached (HIVM module complete; CANN's hivmc makes the NPU binary)" >&2
exit 1
"""
_HIVMC_UNDER_CANN = ("bin/hivmc", "compiler/bishengir/bin/hivmc", "tools/bishengir/bin/hivmc")


def write_hivmc_stand_in(env_root: Path) -> None:
    target = env_root / "evokernel-bin" / "hivmc"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(STAND_IN)
    target.chmod(0o755)


@dataclass(frozen=True)
class TritonAscendToolchain:
    """A usable triton-ascend environment and the tools one compile needs."""

    env: InstalledToolchain
    site_packages: Path
    bishengir_bin: Path  # directory holding bishengir-compile (goes first on PATH)
    stand_in_bin: Path  # directory holding the hivmc stand-in
    hivmc: Path | None  # CANN's real hivmc, when present
    soc: str

    @property
    def python(self) -> Path:
        return self.env.python_executable

    @property
    def full_compile(self) -> bool:
        return self.hivmc is not None

    def describe(self) -> str:
        level = f"NPU binary via {self.hivmc}" if self.full_compile else "HIVM level (no CANN hivmc)"
        return f"triton-ascend {self.env.versions.get('triton-ascend', '?')} for {self.soc}, {level}"


def target_soc() -> str:
    return os.environ.get("TRITON_ASCEND_ARCH") or locate_cann().soc or DEFAULT_SOC


def find_hivmc() -> Path | None:
    on_path = shutil.which("hivmc")
    if on_path:
        return Path(on_path)
    root = locate_cann().root
    found = [root / rel for rel in _HIVMC_UNDER_CANN] if root else []
    return next((p for p in found if p.is_file()), None)


def locate(root: Path | None = None, soc: str | None = None) -> TritonAscendToolchain:
    """The installed toolchain; ToolchainError (one line, with the install command) otherwise."""
    env = installed(NAME, root)
    if env is None:
        raise ToolchainError(f"the triton-ascend toolchain is not installed (run `{INSTALL_COMMAND}`)")
    sites = sorted(env.root.glob("lib/python*/site-packages"))
    bishengir = sites[0] / "ascendnpuir" / "bin" if sites else env.root
    stand_in = env.root / "evokernel-bin"
    fix = f"reinstall with `{INSTALL_COMMAND} --force`"
    if not sites or not (sites[0] / "triton" / "backends" / "ascend" / "compiler.py").is_file():
        raise ToolchainError(f"the triton-ascend toolchain at {env.root} is broken (triton/backends/ascend missing); {fix}")
    if not (bishengir / "bishengir-compile").is_file() or not (stand_in / "hivmc").is_file():
        raise ToolchainError(f"the triton-ascend toolchain at {env.root} is broken (bishengir-compile or the hivmc "
                             f"stand-in missing); {fix}")
    return TritonAscendToolchain(env, sites[0], bishengir, stand_in, find_hivmc(), soc or target_soc())


def toolchain_problem(root: Path | None = None) -> str:
    """Why the toolchain cannot be used ("" when it can)."""
    try:
        locate(root)
    except ToolchainError as exc:
        return str(exc)
    return ""
