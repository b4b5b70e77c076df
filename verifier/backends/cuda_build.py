"""The cuda backend's builds: a recorded ``load_inline`` call as a build job, and the builder's side of
the compile-only build (no GPU here).

Compile-only (``python -m verifier.backends.cuda_build job.json``, in the confined builder): nvcc
compiles the CUDA unit for the target architecture with ``-Xptxas -v`` (registers, shared memory and
spills reach the LLM) and ``--keep``; g++ checks the host unit's syntax with ``-save-temps``; the
candidate's preprocessed lines of both become small policy records (verifier.backends.cuda_policy).
The nvcc object is the job's artifact: never loaded here, its undefined symbols are checked by the
monitor. With a GPU the job is torch's own extension build (verifier.sandbox.inline_builder), whose
library the runner loads.
"""

from __future__ import annotations

import hashlib
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

from verifier import build_flags
from verifier.backends.base import BuildJob
from verifier.backends.cuda_sources import InlineExtension


def _torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "?"


def compile_only_job(ext: InlineExtension, nvcc: str, nvcc_release: str, arch: str, headers,
                     toolchains: tuple[str, ...]) -> BuildJob:
    job = {"name": ext.name, "cpp_sources": ext.cpp_sources, "cuda_sources": ext.cuda_sources,
           "functions": list(ext.functions), "nvcc": nvcc, "arch": arch,
           "include_dirs": [str(d) for d in headers.include_dirs], "after_dirs": [str(d) for d in headers.after_dirs]}
    key = hashlib.sha256(json.dumps({**job, "nvcc_release": nvcc_release, "torch": _torch_version(),
                                     "headers": headers.key}, sort_keys=True).encode()).hexdigest()
    return BuildJob(key, f"cuda_sources of {ext.name}", (("job.json", json.dumps(job)),),
                    (sys.executable, "-m", "verifier.backends.cuda_build", "job.json"),
                    artifact=f"{ext.name}.cuda.o", records=(f"{ext.name}.cu.policy.json", f"{ext.name}.cpp.policy.json"),
                    note=headers.note, toolchains=toolchains, python=True,
                    sources=((ext.cuda_sources, "cuda"), (ext.cpp_sources, "c++")))


def gpu_job(ext: InlineExtension, args: dict, arch: str, toolchains: tuple[str, ...]) -> BuildJob:
    """torch's extension build of the call (loaded by the runner on the GPU)."""
    cflags, cuda_flags = build_flags.compile_flags(args.get("extra_cflags")), build_flags.nvcc_flags(args.get("extra_cuda_cflags"))
    ldflags = build_flags.link_flags(args.get("extra_ldflags"))
    functions = args.get("functions")  # None: no bindings generated (the candidate's own PYBIND11_MODULE), as torch does
    job = {"name": ext.name, "cpp_sources": ext.cpp_sources, "cuda_sources": ext.cuda_sources,
           "functions": None if functions is None else list(ext.functions), "extra_cflags": list(cflags.kept),
           "extra_cuda_cflags": list(cuda_flags.kept), "extra_ldflags": list(ldflags.kept), "arch": arch}
    key = hashlib.sha256(json.dumps({**job, "torch": _torch_version()}, sort_keys=True).encode()).hexdigest()
    note = "; ".join(n for n in (cflags.note("extra_cflags"), cuda_flags.note("extra_cuda_cflags"),
                                 ldflags.note("extra_ldflags")) if n)
    return BuildJob(key, f"extension {ext.name}", (("job.json", json.dumps(job)),),
                    (sys.executable, "-m", "verifier.sandbox.inline_builder", "job.json"), artifact=f"{ext.name}.so",
                    note=note, toolchains=toolchains, python=True,
                    sources=((ext.cuda_sources, "cuda"), (ext.cpp_sources, "c++")))


def main(argv: list[str]) -> int:
    """Builder side of :func:`compile_only_job`."""
    from verifier.backends import cuda, cuda_policy
    from verifier.backends.cuda_headers import HeaderChoice
    from verifier.backends.toolrun import run_tool

    job = json.loads(Path(argv[1]).read_text())
    work = Path.cwd()
    ext = InlineExtension(job["name"], job["cpp_sources"], job["cuda_sources"], tuple(job["functions"]), 0)
    headers = HeaderChoice(tuple(Path(d) for d in job["include_dirs"]), tuple(Path(d) for d in job["after_dirs"]), "")
    define = f"-DTORCH_EXTENSION_NAME={ext.name}"
    (work / f"{ext.name}.cu").write_text(ext.cuda_unit())
    jobs = [cuda.nvcc_command(job["nvcc"], job["arch"], f"{ext.name}.cu", define, headers,
                              ("-c", "-o", f"{ext.name}.cuda.o", *cuda_policy.NVCC_KEEP))]
    if ext.cpp_sources.strip() or ext.functions:
        (work / f"{ext.name}.cpp").write_text(ext.cpp_unit())
        jobs.append(cuda.host_command(job["nvcc"], f"{ext.name}.cpp", define, headers,
                                      ("-fsyntax-only", *cuda_policy.GXX_KEEP)))
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda a: run_tool(a, work, 3600.0), jobs))
    for run in runs:
        tool = Path(run.argv[0]).name
        head = f"{tool} failed (exit {run.returncode}):\n" if not run.ok else ""
        print(head + run.stderr + run.stdout, file=sys.stderr)
    cuda_policy.write_records((ext,), work)
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
