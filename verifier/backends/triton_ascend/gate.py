"""The triton-ascend compile gate, monitor side: the driver as a build job, and its result as a verdict.

The monitor runs :mod:`driver` in the confined builder, with the toolchain's python (it never imports
triton-ascend itself): the driver's forked, seccomp-filtered child records the candidate's launches
and the driver compiles each launch's TTIR through triton-ascend and bishengir (:mod:`driver`). The
whole outcome is cached by the monitor (verifier.monitor.build_cache) under :func:`cache_key`: the
candidate source, the task source, the SoC, the compile level and the toolchain versions.

Environment of the driver: the toolchain links the main environment's site-packages (torch), puts
ascendnpu-ir's ``bin`` first on PATH (triton-ascend finds ``bishengir-compile`` there), then the
hivmc stand-in; where CANN's hivmc was found, its directory goes first instead (CANN's
bishengir-compile beside it matches that hivmc); ``TRITON_DISABLE_LINE_INFO=0`` keeps source
locations in the MLIR so bishengir's errors point at candidate.py lines.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from verifier.backends.base import BuildJob
from verifier.backends.toolrun import trim_diagnostics
from verifier.backends.triton_ascend.diagnostics import hints, summarise
from verifier.backends.triton_ascend.toolchain import INSTALL_COMMAND, TritonAscendToolchain
from verifier.toolchains.env import launch_env

DRIVER = Path(__file__).with_name("driver.py")
SECCOMP = Path(__file__).resolve().parents[2] / "sandbox" / "seccomp.py"
GATE_VERSION = "5"  # bump when the driver's result for the same inputs would change
RECORD_SHARE = 0.5  # share of the compile timeout the recording may take


def cache_key(candidate_source: str, task_source: str, toolchain: TritonAscendToolchain, dtype: str = "float32") -> str:
    parts = [GATE_VERSION, candidate_source, task_source, dtype, toolchain.soc, str(toolchain.full_compile),
             json.dumps(toolchain.env.versions, sort_keys=True)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def driver_env(toolchain: TritonAscendToolchain) -> dict[str, str]:
    """What the driver needs beyond the builder's own environment (which names its private HOME and TMPDIR)."""
    env = launch_env()
    if toolchain.hivmc is not None:  # CANN's own bishengir-compile, next to its hivmc, matches it: first
        tools = [str(toolchain.hivmc.parent), str(toolchain.bishengir_bin)]
    else:
        tools = [str(toolchain.bishengir_bin), str(toolchain.stand_in_bin)]
    env["PATH"] = ":".join(tools + [env.get("PATH", "/usr/bin:/bin")])
    env.update({"TRITON_CACHE_DIR": "triton-cache", "TRITON_DISABLE_LINE_INFO": "0", "TRITON_INTERPRET": "0"})
    return {k: v for k, v in env.items() if k not in ("HOME", "TMPDIR")}


def driver_job(candidate_source: str, task_source: str, toolchain: TritonAscendToolchain, timeout_s: float,
               dtype: str = "float32") -> BuildJob:
    request = {"candidate_source": candidate_source, "task_source": task_source, "dtype": dtype, "soc": toolchain.soc,
               "full_compile": toolchain.full_compile, "workdir": ".", "cache_dir": "",
               "seccomp": str(SECCOMP) if SECCOMP.is_file() else "",
               "record_timeout_s": max(10.0, timeout_s * RECORD_SHARE), "max_configs": 8, "seed": 0,
               "toolchain_key": json.dumps(toolchain.env.versions, sort_keys=True)}
    return BuildJob(cache_key(candidate_source, task_source, toolchain, dtype), "triton-ascend kernels",
                    (("request.json", json.dumps(request)),),
                    (str(toolchain.python), str(DRIVER), "request.json", "result.json"), records=("result.json",),
                    toolchains=(str(toolchain.env.root),), env=tuple(sorted(driver_env(toolchain).items())))


def judge(records: dict[str, bytes], output: str, candidate_source: str, toolchain: TritonAscendToolchain) -> tuple[bool, str]:
    """(passed, feedback) of a finished driver run."""
    raw = records.get("result.json") or b""
    if not raw:
        return False, _broken(output, toolchain)
    result = json.loads(raw)
    kernels = result.get("kernels") or []
    if result.get("died"):  # killed by the sandbox filter, a signal or the timeout: never a pass
        return False, f"recording the candidate's launches failed: {result['died']}"
    error = result.get("error")
    if not kernels:
        if error:
            text = f"{error['stage']} failed (no kernel was launched before):\n{error['text']}"
            return False, text + hints(error["text"])
        return False, ("ModelNew.forward launched no @triton.jit kernel on the task's inputs: all arithmetic "
                       "must happen in Triton kernels")
    ok, text = summarise(kernels, candidate_source, toolchain.soc, toolchain.full_compile)
    if error and ok:  # launches compiled, but forward failed after them (correctness will say more)
        text += f"\nnote: {error['stage']} raised after {error['launches']} launch(es): {error['text'].splitlines()[-1]}"
    return ok, text


def _broken(output: str, toolchain: TritonAscendToolchain) -> str:
    """The driver died before writing a result: say so in one line, never a traceback."""
    lines = [ln for ln in trim_diagnostics(output).splitlines() if ln.strip()]
    last = lines[-1].strip() if lines else "no output"
    return (f"the triton-ascend toolchain at {toolchain.env.root} failed to run ({last[:200]}); "
            f"reinstall with `{INSTALL_COMMAND} --force`")
