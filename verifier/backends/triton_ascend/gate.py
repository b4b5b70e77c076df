"""The triton-ascend compile gate, main-environment side: cache, request, driver subprocess, verdict.

Called from the backend's ``compile`` (inside the sandbox child, before its seccomp filter). It
never imports triton-ascend (nor executes the task: its first meta-device op would import
torch._dynamo and with it upstream triton in compiled mode, spoiling this process's interpreter): it
writes a request (candidate, task source, dtype), runs :mod:`driver` with the toolchain's python
(``run_tool``: own process group, wall-clock timeout) and reads the JSON result back.

Two caches under the verifier cache (``build_dir/triton-ascend``):
- ``gates/<key>.json``: the whole outcome, keyed by the candidate source, the task source, the
  SoC, the compile level and the toolchain versions; a hit costs no subprocess at all;
- ``kernels/<key>.json`` (the driver's): one per kernel specialisation, keyed by its TTIR (the
  kernel source after specialisation), launch options, SoC, level and versions, so a refinement
  that changes only ``ModelNew`` or one of several kernels recompiles only what changed.

Environment of the driver: the toolchain links this environment's site-packages (torch), puts
ascendnpu-ir's ``bin`` first on PATH (triton-ascend finds ``bishengir-compile`` there), then the
hivmc stand-in; where CANN's hivmc was found, its directory goes first instead (CANN's
bishengir-compile beside it matches that hivmc); ``TMPDIR`` is a private directory (bishengir writes
its intermediates there); ``TRITON_DISABLE_LINE_INFO=0`` keeps source locations in the MLIR so
bishengir's errors point at candidate.py lines.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from pathlib import Path

from verifier.backends.base import CompileOutcome
from verifier.backends.toolrun import run_tool, trim_diagnostics
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


def driver_env(toolchain: TritonAscendToolchain, workdir: Path) -> dict[str, str]:
    env = launch_env()
    if toolchain.hivmc is not None:  # CANN's own bishengir-compile, next to its hivmc, matches it: first
        tools = [str(toolchain.hivmc.parent), str(toolchain.bishengir_bin)]
    else:
        tools = [str(toolchain.bishengir_bin), str(toolchain.stand_in_bin)]
    env["PATH"] = ":".join(tools + [env.get("PATH", "/usr/bin:/bin")])
    env.update({"TMPDIR": str(workdir), "TRITON_CACHE_DIR": str(workdir / "triton-cache"),
                "TRITON_DISABLE_LINE_INFO": "0", "TRITON_INTERPRET": "0", "HOME": str(workdir)})
    return env


def compile_gate(candidate_source: str, task_source: str, toolchain: TritonAscendToolchain, cache_root: Path,
                 timeout_s: float, dtype: str = "float32") -> CompileOutcome:
    start = time.perf_counter()
    key = cache_key(candidate_source, task_source, toolchain, dtype)
    hit = cache_root / "gates" / f"{key}.json"
    if hit.is_file():
        data = json.loads(hit.read_text())
        return _outcome(bool(data["ok"]), str(data["diagnostics"]), start, cached=True)
    workdir = Path(tempfile.mkdtemp(prefix="evokernel-triton-ascend-"))
    try:
        ok, text, cacheable = _run_driver(candidate_source, task_source, dtype, toolchain, cache_root, workdir, timeout_s)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if cacheable:
        hit.parent.mkdir(parents=True, exist_ok=True)
        hit.write_text(json.dumps({"ok": ok, "diagnostics": text}))
    return _outcome(ok, text, start, cached=False)


def _outcome(ok: bool, text: str, start: float, cached: bool) -> CompileOutcome:
    note = text.splitlines()[0] if ok and text else ""  # the level reached: the passing gate's reason
    return CompileOutcome(ok, text, time.perf_counter() - start, cached=cached, note=note)


def _run_driver(candidate_source: str, task_source: str, dtype: str, toolchain: TritonAscendToolchain,
                cache_root: Path, workdir: Path, timeout_s: float) -> tuple[bool, str, bool]:
    """(ok, feedback, cacheable): infrastructure trouble (a broken toolchain, a timeout) is not cached."""
    request = {"candidate_source": candidate_source, "task_source": task_source, "dtype": dtype, "soc": toolchain.soc,
               "full_compile": toolchain.full_compile, "workdir": str(workdir),
               "cache_dir": str(cache_root / "kernels"), "seccomp": str(SECCOMP) if SECCOMP.is_file() else "",
               "record_timeout_s": max(10.0, timeout_s * RECORD_SHARE), "max_configs": 8, "seed": 0,
               "toolchain_key": json.dumps(toolchain.env.versions, sort_keys=True)}
    (workdir / "request.json").write_text(json.dumps(request))
    result_path = workdir / "result.json"
    run = run_tool([toolchain.python, DRIVER, workdir / "request.json", result_path], workdir, timeout_s,
                   env=driver_env(toolchain, workdir))
    if run.timed_out:
        return False, f"triton-ascend compile timed out after {timeout_s:.0f} s", False
    if not result_path.is_file():
        return False, _broken(run.stdout + "\n" + run.stderr, toolchain, workdir), False
    result = json.loads(result_path.read_text())
    kernels = result.get("kernels") or []
    if result.get("died"):  # killed by the sandbox filter, a signal or the timeout: never a pass
        timed_out = result["died"].startswith("recording timed out")  # may be the machine's load: not cached
        return False, f"recording the candidate's launches failed: {result['died']}", not timed_out
    error = result.get("error")
    if not kernels:
        if error:
            text = f"{error['stage']} failed (no kernel was launched before):\n{error['text']}"
            return False, text + hints(error["text"]), True
        return False, ("ModelNew.forward launched no @triton.jit kernel on the task's inputs: all arithmetic "
                       "must happen in Triton kernels"), True
    ok, text = summarise(kernels, candidate_source, toolchain.soc, toolchain.full_compile)
    if error and ok:  # launches compiled, but forward failed after them (correctness will say more)
        text += f"\nnote: {error['stage']} raised after {error['launches']} launch(es): {error['text'].splitlines()[-1]}"
    return ok, text, True


def _broken(output: str, toolchain: TritonAscendToolchain, workdir: Path) -> str:
    """The driver died before writing a result: say so in one line, never a traceback."""
    lines = [ln for ln in trim_diagnostics(output, strip_prefixes=(str(workdir),)).splitlines() if ln.strip()]
    last = lines[-1].strip() if lines else "no output"
    return (f"the triton-ascend toolchain at {toolchain.env.root} failed to run ({last[:200]}); "
            f"reinstall with `{INSTALL_COMMAND} --force`")
