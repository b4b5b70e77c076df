"""Where a sampled instruction address of the runner lies: which mapped object, and whose code that is,
read by the monitor from ``/proc/<pid>/maps`` (the kernel's list; the runner cannot rewrite it).

Every executable mapping gets one of four kinds:

- ``own``: a library the monitor built from the candidate's recorded loader call and placed in the
  runner's ``libs`` directory, and the system's math libraries a kernel calls for its elementwise math
  (libm, libmvec, SLEEF);
- ``runtime``: what any forward runs on: the kernel (system calls, page faults), the vDSO, the Python
  interpreter and its extension modules, the C and C++ runtimes, the OpenMP runtime, and
  torch's bindings and allocator (``libtorch_python``, ``libc10``, ``torch/_C``);
- ``torch``: ``libtorch_cpu`` and the other libraries in torch's ``lib`` directory; whether a sample
  there is torch's compute or its glue is the function's to say (verifier.monitor.torch_glue);
- ``foreign``: executable code from anywhere else: another numerical library (numpy's, a system BLAS),
  a file in the runner's own directory, anonymous or memfd memory. No forward of a native kernel runs
  there; samples in it count like torch's compute.
"""

from __future__ import annotations

import re
import sys
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from verifier.sandbox.observer import torch_package_dir

OWN, RUNTIME, TORCH, FOREIGN = "own", "runtime", "torch", "foreign"
KERNEL = "[kernel]"
_RUNTIME_LIBS = re.compile(r"^(libc|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt|libutil|"
                           r"libgomp|libz|libffi|libexpat|libbz2|liblzma|libuuid|libcrypt|libnsl)([-.].*)?\.so(\.[\d.]+)?$")
_OWN_LIBS = re.compile(r"^(libsleef(gnuabi)?|libm|libmvec)\.so(\.[\d.]+)?$")
_TORCH_RUNTIME = re.compile(r"^(libtorch_python|libc10|libshm|libtorch_global_deps|libtorch|_C\.cpython.*)\.so$")
_LINE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) ([0-9a-f]+) \S+ \d+\s*(.*)$")


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    offset: int  # file offset of ``start``
    path: str  # "" for anonymous memory; "[vdso]" and the like as the kernel names them
    kind: str


@cache
def _torch_dir() -> str:
    """torch's package directory, resolved (found without importing torch: 1.5-2 s the monitor does not need)."""
    found = torch_package_dir()
    return str(found.resolve()) if found else "/nonexistent-torch"


@cache  # sysconfig expands its paths anew on every call: 2.2 s of a verification's 10 s before
def _python_dirs() -> tuple[str, ...]:
    dirs = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib"), sys.base_prefix + "/lib",
            str(Path(sys.executable).resolve().parent)}
    return tuple(sorted(d.rstrip("/") + "/" for d in dirs if d))


def kind_of(path: str, libs: str, runtime: tuple[str, ...] = ()) -> str:
    """The kind of an executable mapping of ``path`` (see the module doc); ``libs``: the runner's
    directory of monitor-built libraries; ``runtime``: more files of the verifier's own."""
    if path and path in runtime:
        return RUNTIME
    if not path or path.startswith("/memfd:") or path.endswith("(deleted)"):
        return FOREIGN
    if path.startswith("["):
        return RUNTIME if path in ("[vdso]", "[vsyscall]") else FOREIGN
    name = Path(path).name
    if libs and path.startswith(libs.rstrip("/") + "/"):
        return OWN
    if _OWN_LIBS.match(name) and path.startswith(("/usr/", "/lib")):
        return OWN
    torch_dir = _torch_dir() + "/"
    if path.startswith(torch_dir):
        if _TORCH_RUNTIME.match(name) or (path.startswith(torch_dir + "lib/") and name.startswith("libgomp")):
            return RUNTIME
        return TORCH
    if _RUNTIME_LIBS.match(name) and path.startswith(("/usr/", "/lib", torch_dir)):
        return RUNTIME
    if re.match(r"^(python3(\.\d+)?|libpython3.*\.so.*)$", name) or path.startswith(_python_dirs()):
        return RUNTIME if "site-packages/" not in path else FOREIGN
    return FOREIGN


class CodeMap:
    """The executable mappings of one process, sorted, with their kinds."""

    def __init__(self, pid: int, libs: str, runtime: tuple[str, ...] = ()) -> None:
        self.pid, self.libs, self.runtime = pid, libs, runtime
        self.mappings: list[Mapping] = []
        self._starts: list[int] = []
        self.refresh()

    def refresh(self) -> None:
        try:
            text = Path(f"/proc/{self.pid}/maps").read_text()
        except OSError:
            return
        mappings = []
        for line in text.splitlines():
            m = _LINE.match(line)
            if m and m.group(3)[2] == "x":
                path = m.group(5).strip()
                mappings.append(Mapping(int(m.group(1), 16), int(m.group(2), 16), int(m.group(4), 16), path,
                                        kind_of(path, self.libs, self.runtime)))
        self.mappings = sorted(mappings, key=lambda m: m.start)
        self._starts = [m.start for m in self.mappings]

    def locate(self, ips: np.ndarray) -> np.ndarray:
        """The index in ``mappings`` of each address (-1: in no executable mapping)."""
        if not self.mappings:
            return np.full(len(ips), -1, np.int64)
        starts = np.array(self._starts, np.uint64)
        ends = np.array([m.end for m in self.mappings], np.uint64)
        k = np.searchsorted(starts, ips, side="right").astype(np.int64) - 1
        inside = (k >= 0) & (ips < ends[np.maximum(k, 0)])
        return np.where(inside, k, -1)
