"""The builder's side of a ``load_inline`` call: torch's extension build, never the import.

``python -m verifier.sandbox.inline_builder job.json`` runs in the confined builder (no network, writes
only its build directory, the builder's seccomp filter) with the arguments the monitor validated: it
writes the module source the way ``torch.utils.cpp_extension.load_inline`` does (``main.cpp``: torch's
extension header, the candidate's ``cpp_sources``, a pybind11 module defining ``functions``; for CUDA
also ``cuda.cu``) and runs torch's ninja build of it (``-save-temps`` keeps ``main.ii`` for the policy
checks). The built library is only ever loaded by the runner, after the monitor has checked it.
Exit status 0: built; otherwise the compiler's output is on stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def module_source(cpp_sources: str, functions, error_handling: bool) -> str:
    """main.cpp as load_inline writes it."""
    lines = ["#include <torch/extension.h>", cpp_sources, "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"]
    names = functions.items() if isinstance(functions, dict) else [(f, f) for f in functions or []]
    for name, doc in names:
        target = f"torch::wrap_pybind_function({name})" if error_handling else name
        lines.append(f'm.def("{name}", {target}, "{doc}");')
    lines.append("}")
    return "\n".join(lines) + "\n"


def cuda_source(cuda_sources: str) -> str:
    return "\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>", cuda_sources]) + "\n"


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[1]).read_text())
    build_dir = Path.cwd()
    from torch.utils import cpp_extension

    sources = [build_dir / "main.cpp"]
    sources[0].write_text(module_source(job["cpp_sources"], job.get("functions"), job.get("with_pytorch_error_handling", True)))
    with_cuda = bool(job.get("cuda_sources"))
    if with_cuda:
        sources.append(build_dir / "cuda.cu")
        sources[1].write_text(cuda_source(job["cuda_sources"]))
    try:
        cpp_extension._write_ninja_file_and_build_library(
            job["name"], [str(s) for s in sources], [*job.get("extra_cflags", []), "-save-temps"],
            job.get("extra_cuda_cflags") or None, None, job.get("extra_ldflags") or None, [], str(build_dir),
            False, with_cuda, None)
    except Exception as exc:  # torch raises RuntimeError with the full compiler log
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
