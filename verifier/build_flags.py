"""Which compiler and linker flags a candidate's loader call may pass (the monitor's allow-list).

A candidate's build helper may compute its flags any way it likes (the runner records the real call);
the monitor keeps the flags that only tune code generation and drops the rest, saying which. Refused
because they reach files, change what gets compiled or linked, or run code at build time:
``-include``/``-I``/``-L``/``-l`` other than OpenMP, ``-fplugin``, ``-specs``, ``-Wl,...`` (``--wrap``,
``--defsym``), ``@file`` response files, ``-B``, ``-isystem``, ``-save-temps`` (the monitor's own),
``-o``, ``-x``. ``-ffast-math`` and its parts are dropped too: they change NaN/Inf semantics that the
correctness gate checks (research/verifier.md §5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMPILE = re.compile(
    r"-O[0-3s]?|-march=(native|x86-64(-v[234])?|[a-z0-9_-]+)|-mtune=[a-z0-9_-]+|"
    r"-m(avx|avx2|avx512[a-z]*|fma|f16c|sse[0-9.]*|ssse3|bmi2?|popcnt|lzcnt|no-[a-z0-9-]+)|"
    r"-fopenmp(-simd)?|-std=(c|gnu)\+\+(11|14|17|20|2a|23|2b)|-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?|"
    r"-U[A-Za-z_][A-Za-z0-9_]*|-W[a-z0-9=+-]*|-w|-g[0-3]?|-funroll(-all)?-loops|-fno-unroll-loops|"
    r"-fvectorize|-ftree-vectorize|-fno-tree-vectorize|-fPIC|-fpic|-fno-strict-aliasing|-fstrict-aliasing|"
    r"-fomit-frame-pointer|-fno-omit-frame-pointer|-ffp-contract=(fast|on|off)|-fno-math-errno|"
    r"-fno-exceptions|-fexceptions|-fno-rtti|-pthread|-DNDEBUG")
_LINK = re.compile(r"-lgomp|-fopenmp|-pthread|-lm|-O[0-3s]?")
# nvcc's own flags that only tune code generation
_NVCC = re.compile(
    r"-O[0-3]|--use_fast_math|-use_fast_math|--ftz=(true|false)|--prec-div=(true|false)|"
    r"--prec-sqrt=(true|false)|--fmad=(true|false)|-lineinfo|--expt-relaxed-constexpr|"
    r"--expt-extended-lambda|-std=c\+\+(14|17|20)|-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?|"
    r"-U[A-Za-z_][A-Za-z0-9_]*|--maxrregcount=\d+|-maxrregcount=\d+|-Xptxas=-v|--extra-device-vectorization|"
    r"-arch=sm_\d+a?|-gencode=arch=compute_\d+a?,code=sm_\d+a?|--restrict|-restrict")


@dataclass(frozen=True)
class Flags:
    kept: tuple[str, ...]
    dropped: tuple[str, ...]

    def note(self, what: str) -> str:
        return f"{what} not allowed and dropped: {' '.join(self.dropped)}" if self.dropped else ""


def _filter(flags: list[str] | None, allowed: re.Pattern) -> Flags:
    kept, dropped = [], []
    for flag in flags or []:
        (kept if isinstance(flag, str) and allowed.fullmatch(flag) else dropped).append(str(flag))
    return Flags(tuple(kept), tuple(dropped))


def compile_flags(flags: list[str] | None) -> Flags:
    return _filter(flags, _COMPILE)


def link_flags(flags: list[str] | None) -> Flags:
    return _filter(flags, _LINK)


def nvcc_flags(flags: list[str] | None) -> Flags:
    return _filter(flags, _NVCC)
