"""The triton backend's ahead-of-time compile, as a build the monitor runs in the confined builder.

Without a GPU the compile gate compiles each launched ``@triton.jit`` kernel for the target
architecture (verifier.backends.triton_aot: signatures and constexprs read from the source, Triton's
bundled ptxas making real cubins). It runs in the builder (``python -m verifier.backends.triton_build
job.json``): a fresh, confined process in compiled mode, while the runner imports the same candidate
interpreted for the correctness trials (Triton's mode is fixed per process: verifier.backends.triton_modes).
What it imports of the candidate is only the kernels' slice (verifier.backends.triton_import_slice),
never ModelNew. Exit status 0: every kernel compiled; its summary (or the errors) on stderr.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from pathlib import Path

from verifier.backends.base import BuildJob

JOB_VERSION = "1"
RESULT = "result.json"


def aot_job(candidate_source: str, capability: int, triton_version: str, toolchains: tuple[str, ...]) -> BuildJob:
    job = {"source": candidate_source, "capability": capability}
    key = hashlib.sha256(json.dumps({**job, "triton": triton_version, "v": JOB_VERSION}, sort_keys=True).encode()).hexdigest()
    return BuildJob(key, "triton kernels", (("job.json", json.dumps(job)),),
                    (sys.executable, "-m", "verifier.backends.triton_build", "job.json"), records=(RESULT,),
                    toolchains=toolchains, python=True)


def judge(code: int, output: str, records: dict[str, bytes]) -> tuple[bool, str]:
    """(passed, the compile's summary or errors) from the builder's result file (its log also holds
    Triton's own warnings)."""
    try:
        result = json.loads(records.get(RESULT) or b"{}")
    except ValueError:
        result = {}
    if "ok" not in result:
        return False, "the triton ahead-of-time compile failed: " + (output.strip().splitlines() or ["no output"])[-1][:300]
    return bool(result["ok"]) and code == 0, str(result.get("text", ""))[:4000]


def _name_the_installation_cheaply() -> None:
    """Triton keys its kernel cache by a hash of its own package, reading libtriton (~500 MB) again in every
    process: 0.4 s of this builder's 2 s. The builder's Triton cache lies in its throwaway work directory (its
    HOME), so the version and libtriton's size and modification time name the installation as well; Triton's
    own warm-up pool hands its workers a precomputed key the same way (``triton.runtime.cache.triton_key``)."""
    import triton
    from triton.runtime import cache

    libs = sorted(p for p in (Path(triton.__file__).parent / "_C").glob("libtriton*") if p.is_file())
    key = "-".join([triton.__version__, *(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in libs)])
    cache.triton_key = lambda: key


def main(argv: list[str]) -> int:
    from verifier.backends.triton_aot import compile_candidate
    from verifier.backends.triton_modes import use_mode

    job = json.loads(Path(argv[1]).read_text())
    use_mode(False)
    _name_the_installation_cheaply()
    result = compile_candidate(ast.parse(job["source"]), Path.cwd(), int(job["capability"]))
    Path(RESULT).write_text(json.dumps({"ok": bool(result["ok"]), "text": str(result["text"])}))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
