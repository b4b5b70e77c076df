"""Locating CANN and probing the NPU: the Ascend C backend's availability, with reasons.

CANN's root comes from the usual variables (ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME,
ASCEND_INSTALL_PATH, ASCEND_CANN_PACKAGE_PATH) or install paths (~/Ascend/ascend-toolkit/latest,
/usr/local/Ascend/ascend-toolkit/latest, /usr/local/Ascend/cann). ``bisheng`` is looked up under
the root, then on PATH; ``msopgen`` (operator-project flow only) likewise. torch_npu is probed in
a subprocess: importing it where CANN's libraries are missing breaks ``import torch``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Mapping

ROOT_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_INSTALL_PATH", "ASCEND_CANN_PACKAGE_PATH")
DEFAULT_ROOTS = ("~/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann")
DEFAULT_SOC = "Ascend910B2"
NPU_ARCH = {"Ascend910B": "dav-2201", "Ascend910_93": "dav-2201", "Ascend310P": "dav-2002", "Ascend950": "dav-3510"}


@dataclass(frozen=True)
class CannToolchain:
    root: Path | None
    bisheng: Path | None
    msopgen: Path | None
    soc: str  # e.g. Ascend910B2 (env SOC_VERSION)
    npu_arch: str  # e.g. dav-2201

    def include_dirs(self) -> tuple[Path, ...]:
        if self.root is None:
            return ()
        rel = ("include", "compiler/tikcpp/include", "compiler/tikcpp/tikcfw", "compiler/tikcpp/tikcfw/impl",
               "compiler/tikcpp/tikcfw/interface", "compiler/ascendc/include/basic_api",
               "compiler/ascendc/include/highlevel_api")
        return tuple(self.root / r for r in rel)

    def lib_dirs(self) -> tuple[Path, ...]:
        return (self.root / "lib64",) if self.root else ()


def _first_file(*candidates: Path | None) -> Path | None:
    return next((c for c in candidates if c is not None and c.is_file()), None)


def locate_cann(env: Mapping[str, str] | None = None) -> CannToolchain:
    env = os.environ if env is None else env
    roots = [Path(env[v]) for v in ROOT_VARIABLES if env.get(v)] + [Path(r).expanduser() for r in DEFAULT_ROOTS]
    root = next((r for r in roots if r.is_dir()), None)
    path = env.get("PATH", "")
    bisheng = msopgen = None
    if root is not None:
        arch_dirs = sorted(root.glob("*-linux/ccec_compiler/bin/bisheng"))
        bisheng = _first_file(root / "bin" / "bisheng", root / "compiler" / "ccec_compiler" / "bin" / "bisheng",
                              *arch_dirs)
        msopgen = _first_file(root / "python" / "site-packages" / "bin" / "msopgen", root / "bin" / "msopgen")
    which_bisheng, which_msopgen = shutil.which("bisheng", path=path), shutil.which("msopgen", path=path)
    bisheng = bisheng or (Path(which_bisheng) if which_bisheng else None)
    msopgen = msopgen or (Path(which_msopgen) if which_msopgen else None)
    soc = env.get("SOC_VERSION", DEFAULT_SOC)
    arch = next((a for prefix, a in NPU_ARCH.items() if soc.startswith(prefix)), "dav-2201")
    return CannToolchain(root, bisheng, msopgen, soc, arch)


def toolchain_problem(chain: CannToolchain) -> str:
    """Why Ascend C sources cannot be compiled here ("" when they can)."""
    if chain.root is None and chain.bisheng is None:
        return ("CANN toolkit not found (install it with Huawei's Ascend-cann-toolkit_*.run installer to "
                "/usr/local/Ascend/ascend-toolkit/latest, or set ASCEND_HOME_PATH to one)")
    if chain.bisheng is None:
        return f"bisheng (CANN's Ascend C compiler) not found under {chain.root} or on PATH"
    return ""


def probe_npu(timeout_s: float = 60.0) -> tuple[bool, str]:
    """(True, description) when torch_npu imports and sees an NPU; (False, why not) otherwise."""
    if find_spec("torch_npu") is None:
        return False, "torch_npu is not installed (it must match torch and CANN)"
    code = ("import torch, torch_npu; ok = torch.npu.is_available(); "
            "print('OK', torch.npu.device_count() if ok else 0)")
    try:
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"torch_npu probe timed out after {timeout_s:.0f} s"
    out = run.stdout.strip().split()
    if run.returncode != 0 or not out or out[0] != "OK":
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"torch_npu does not import: {last[:200]}"
    if out[1] == "0":
        return False, "no NPU device (torch.npu.is_available() is False)"
    return True, f"{out[1]} NPU device(s)"
