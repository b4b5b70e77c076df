"""The builder's side of a ``load_inline`` call: torch's extension build, never the import.

``python -m verifier.sandbox.inline_builder job.json`` runs in the confined builder (no network, writes
only its build directory, the builder's seccomp filter) with the arguments the monitor validated: it
writes the module source byte for byte as ``torch.utils.cpp_extension.load_inline`` does (``main.cpp``:
torch's extension header unless ``no_implicit_headers``, the candidate's ``cpp_sources``, and a pybind11
module defining ``functions`` only when ``functions`` was given: a candidate's own ``PYBIND11_MODULE``
without ``functions=`` builds as it does under torch; for CUDA also ``cuda.cu``) and runs torch's ninja build of it (``-save-temps`` keeps ``main.ii`` for the policy
checks). The built library is only ever loaded by the runner, after the monitor has checked it.
Exit status 0: built; otherwise the compiler's output is on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def module_source(cpp_sources: str, functions, error_handling: bool, implicit_headers: bool = True) -> str:
    """main.cpp as load_inline writes it (torch.utils.cpp_extension.load_inline, torch 2.x): the header
    line, the sources, and the bindings only where ``functions`` is not None (a str, list or dict)."""
    lines = (["#include <torch/extension.h>"] if implicit_headers else []) + [cpp_sources]
    if functions is not None:
        names = functions if isinstance(functions, dict) else {f: f for f in ([functions] if isinstance(
            functions, str) else functions)}
        lines.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
        for name, doc in names.items():
            target = f"torch::wrap_pybind_function({name})" if error_handling else name
            lines.append(f'm.def("{name}", {target}, "{doc}");')
        lines.append("}")
    return "\n".join(lines)


def cuda_source(cuda_sources: str, implicit_headers: bool = True) -> str:
    head = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"] if implicit_headers else []
    return "\n".join([*head, cuda_sources])


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[1]).read_text())
    build_dir = Path.cwd()
    from torch.utils import cpp_extension

    sources = [build_dir / "main.cpp"]
    implicit = not job.get("no_implicit_headers", False)
    sources[0].write_text(module_source(job["cpp_sources"], job.get("functions"), job.get("with_pytorch_error_handling", True),
                                        implicit))
    with_cuda = bool(job.get("cuda_sources"))
    if with_cuda and job.get("arch"):
        # the target the monitor chose (the GPU's own, found outside the sandbox): without it torch's build
        # asks the CUDA driver for the device's capability, and the builder may not open the device
        from verifier.backends.cuda import arch_list_entry

        os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list_entry(job["arch"])
    if with_cuda:
        sources.append(build_dir / "cuda.cu")
        sources[1].write_text(cuda_source(job["cuda_sources"], implicit))
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
