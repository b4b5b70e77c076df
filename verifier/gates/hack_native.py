"""Static policy on the candidate's C/C++/CUDA text, for what leaves no symbol in the built object
(comments and string literals stripped first, so words inside them never count).

Everything a kernel can *call* is judged on the built object instead (verifier.gates.native_symbols:
libc's ``clone`` or ``fopen``, ATen entry points that bypass the dispatcher, the CPython API), so a
method named ``clone``, ``add`` or ``read`` and a user ``struct OnlineSoftmax`` are never refused
for their names. What stays here has no symbol: preprocessor directives that read or relabel files
(``#include "/abs/path"``, ``#embed``, line markers, ``__has_include`` probes), inline assembly
outside CUDA device code, load-time hooks (constructor attributes, ifunc), the cycle counter and
return-address builtins; and what every torch extension references through torch's and pybind11's
own headers, so that only the candidate's own naming of it tells: dispatch-key guards (which hide
ATen calls from an observer on the Python key) and the CPython/pybind11 calls that run code or
reach attributes. A registry of small named checks, each with its exploit in a comment; the build
tier (verifier.gates.hack_build) runs the same text checks again after the preprocessor.

:func:`run_native_checks` is what the monitor runs on each recorded source before building it.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import Callable, Iterator

from verifier.gates.hack_native_names import DISPATCH_SWITCHES, PY_DENIED, PYBIND_NEEDS
from verifier.gates.hack_python import Finding

_COMMENTS_AND_STRINGS = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_TOKEN = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*|::|\S")


@dataclass(frozen=True)
class NativeContext:
    code: str  # comments and string literals replaced by spaces (line numbers kept)
    raw: str
    task_dtype: str
    cuda: bool = False  # compiled by nvcc: __device__/__global__ bodies are GPU code

    @classmethod
    def build(cls, raw: str, task_dtype: str = "float32", cuda: bool = False) -> "NativeContext":
        def blank(m: re.Match) -> str:
            text = m.group(0)
            if text.startswith(("//", "/*")):
                return re.sub(r"[^\n]", " ", text)
            return text[0] + re.sub(r"[^\n]", " ", text[1:-1]) + text[-1]
        return cls(_COMMENTS_AND_STRINGS.sub(blank, raw), raw, task_dtype, cuda)

    def tokens(self) -> Iterator[tuple[str, int, int]]:
        """(token, line, index into code)."""
        for m in _TOKEN.finditer(self.code):
            yield m.group(0), self.line_of(m.start()), m.start()

    def line_of(self, index: int) -> int:
        return bisect.bisect_left(self._newlines, index) + 1

    @functools.cached_property
    def _newlines(self) -> list[int]:
        return [m.start() for m in re.finditer("\n", self.code)]


NativeCheck = Callable[[NativeContext], Iterator[Finding]]
NATIVE_CHECKS: dict[str, NativeCheck] = {}


def native_check(name: str) -> Callable[[NativeCheck], NativeCheck]:
    def register(fn: NativeCheck) -> NativeCheck:
        NATIVE_CHECKS[name] = fn
        return fn
    return register


_DIRECTIVE_VIEW = re.compile(r'//[^\n]*|/\*.*?\*/|("(?:\\.|[^"\\\n])*")', re.S)
_DIRECTIVE = re.compile(r"\s*(?:#|%:)\s*(include_next|include|import|embed|line\b|pragma\b|\d)")
_HAS_INCLUDE = re.compile(r"__has_include(?:_next)?\s*\(\s*([<\"])([^>\"]*)[>\"]")


def directive_lines(raw: str) -> list[str]:
    """Lines as the preprocessor reads directives: line splices joined, comments gone, strings kept."""
    joined = raw.replace("\\\n", "")
    return _DIRECTIVE_VIEW.sub(lambda m: m.group(1) or " ", joined).splitlines()


def _path_problem(header: str) -> str:
    """Why an included name may reach a file outside the toolchain's include paths ("" if not)."""
    if header.startswith(("/", "~", "\\")) or re.match(r"[A-Za-z]:", header):
        return "an absolute path"
    if ".." in re.split(r"[/\\]", header):
        return "a path that climbs out with .."
    return ""


@native_check("c_includes")
def _includes(ctx: NativeContext) -> Iterator[Finding]:
    # D4 and issue 23 class 6: `#include "/abs/path"` (or `../..`) reads any visible file at compile
    # time, and its error ("No such file", "Permission denied") is an oracle for which paths exist;
    # so are `__has_include("/x")` and `#pragma GCC dependency "/x"`. A computed `#include MACRO`,
    # #embed and #include_next read files too; #line and line markers (`# 1 "/usr/include/x.h" 3`)
    # relabel the candidate's code as a system header's. Which headers are used is not judged:
    # what they let code call shows in the built object's symbols.
    for lineno, line in enumerate(directive_lines(ctx.raw), 1):
        for probe in _HAS_INCLUDE.finditer(line):
            problem = _path_problem(probe.group(2).strip())
            if problem:
                yield Finding("c_includes", f"__has_include of {problem} is not allowed", lineno)
        directive = _DIRECTIVE.match(line)
        if directive is None:
            if "_Pragma" in line and "dependency" in line:
                yield Finding("c_includes", "_Pragma(\"GCC dependency ...\") reads a file's timestamp", lineno)
            continue
        word = directive.group(1)
        if word == "pragma":
            if re.match(r"\s*(?:#|%:)\s*pragma\s+GCC\s+dependency\b", line):
                yield Finding("c_includes", "#pragma GCC dependency reads a file's timestamp", lineno)
            continue
        if word != "include":
            what = "line markers" if word.isdigit() else f"#{word} directives"
            yield Finding("c_includes", f"{what} are not allowed", lineno)
            continue
        m = re.match(r'\s*(?:#|%:)\s*include\s*([<"])([^>"]*)[>"]', line)
        if not m:
            yield Finding("c_includes", "computed #include (a macro naming the file) is not allowed", lineno)
            continue
        header = m.group(2).strip()
        problem = _path_problem(header)
        if problem:
            yield Finding("c_includes", f"#include of {problem} ({header}) is not allowed: only the toolchain's "
                          "headers may be included", lineno)


_ATTRIBUTE_HOOK = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*?\b(constructor|destructor|ifunc)\b"
                             r"|\[\[\s*gnu\s*::\s*(constructor|destructor|ifunc)\b|\b(init_priority)\s*\(")
_ASM = {"asm", "__asm__", "__asm"}
# Builtins that read the cycle counter (a timer) or walk into the caller's frames (its return
# address leads to the interpreter's code and data): no symbol is left for the object checks.
_NO_SYMBOL_BUILTINS = {"__rdtsc", "__rdtscp", "_rdtsc", "__builtin_ia32_rdtsc", "__builtin_ia32_rdtscp",
                       "__builtin_readcyclecounter", "__builtin_return_address", "__builtin_frame_address",
                       "__builtin_extract_return_addr", "_ReturnAddress", "_AddressOfReturnAddress",
                       "__builtin_dwarf_cfa"}


def _words(words) -> re.Pattern:
    return re.compile(r"(?<![\w:])(?:[A-Za-z_]\w*::)*(" + "|".join(sorted(map(re.escape, words))) + r")\b")


_ASM_OR_BUILTIN = _words(_ASM | _NO_SYMBOL_BUILTINS)


def hook_findings(ctx: NativeContext, label: str = "") -> list[Finding]:
    """Inline assembly outside CUDA device code, load-time hooks and the no-symbol builtins."""
    found = []
    device = _device_spans(ctx.code) if ctx.cuda else []
    for m in _ASM_OR_BUILTIN.finditer(ctx.code):
        tok, index = m.group(1), m.start(1)
        if tok in _ASM and not any(a <= index < b for a, b in device):
            found.append(Finding("c_inline_asm_and_load_hooks", f"{label}{tok}: inline assembly outside CUDA "
                                 "device code is not allowed (it can make system calls)", ctx.line_of(index)))
        elif tok in _NO_SYMBOL_BUILTINS:
            found.append(Finding("c_inline_asm_and_load_hooks", f"{label}{tok}: cycle counters and return "
                                 "addresses are not allowed in kernels", ctx.line_of(index)))
    for m in _ATTRIBUTE_HOOK.finditer(ctx.code):
        word = m.group(1) or m.group(2) or m.group(3)
        found.append(Finding("c_inline_asm_and_load_hooks", f"{label}{word}: code placed to run at load time "
                             "is not allowed", ctx.line_of(m.start())))
    return found


@native_check("c_inline_asm_and_load_hooks")
def _asm(ctx: NativeContext) -> Iterator[Finding]:
    # D6/C4: host inline assembly issues system calls no symbol shows; constructors and ifunc
    # resolvers run at load time, outside forward; rdtsc times the harness; the return address
    # leads into the interpreter. PTX in a __device__/__global__ function stays on the GPU.
    yield from hook_findings(ctx)


# pybind11's C++ API that reaches attributes or runs code (header templates: no symbol of their own)
_PYBIND_CODE = {"getattr", "setattr", "delattr", "globals", "eval", "exec", "eval_file", "import"}
_PY_NAME = re.compile(r"_?Py[A-Z_]\w*")


_PY_CALL = re.compile(r"(?<![\w:])(_?Py[A-Z_]\w*)")
_PYBIND_CALL = re.compile(r"(?<![\w:])((?:py|pybind11)::(?:\w+::)*(" + "|".join(sorted(_PYBIND_CODE)) + r"))\s*\(")
_MEMBER = re.compile(r"(?:\.|->)\s*(attr\s*(?=\()|tp_\w+)")


def python_api_findings(ctx: NativeContext, label: str = "", expanded: bool = False) -> list[Finding]:
    """The candidate's own code calling the CPython API that runs code, imports, or reaches frames
    or attributes (also those every pybind11 module references in its headers), pybind11's
    ``py::getattr``/``eval``/``module_::import``, ``obj.attr(...)`` (before preprocessing only:
    PYBIND11_MODULE's expansion uses it), or a type object's ``tp_*`` slots."""
    found = []
    for m in _PY_CALL.finditer(ctx.code):
        name = m.group(1)
        if name in PYBIND_NEEDS or PY_DENIED.match(name):
            found.append(Finding("c_python_api", f"{label}{name}: the CPython API that runs code or reaches "
                                 "frames and attributes is not allowed", ctx.line_of(m.start())))
    for m in _PYBIND_CALL.finditer(ctx.code):
        found.append(Finding("c_python_api", f"{label}{m.group(1)}(): reaching Python attributes or code from "
                             "native code is not allowed", ctx.line_of(m.start())))
    for m in _MEMBER.finditer(ctx.code):
        member = m.group(1).rstrip()
        if member.startswith("tp_"):
            found.append(Finding("c_python_api", f"{label}{member}: a type object's slots are not allowed",
                                 ctx.line_of(m.start())))
        elif not expanded:
            found.append(Finding("c_python_api", f"{label}.attr(): reaching Python attributes from native code "
                                 "is not allowed", ctx.line_of(m.start())))
    return found


@native_check("c_python_api")
def _python_api(ctx: NativeContext) -> Iterator[Finding]:
    # Issue 23 class 4: from native code, the interpreter's API replaces functions, reads frames
    # and runs code in the runner; the symbol check refuses the rest of it on the built object.
    yield from python_api_findings(ctx)


_SWITCH = _words(DISPATCH_SWITCHES)


def dispatch_switch_findings(ctx: NativeContext, label: str = "") -> list[Finding]:
    """The candidate's own code switching dispatch keys or RecordFunction off, or redispatching."""
    return [Finding("c_aten_compute", f"{label}{m.group(0)}: switching the dispatcher's keys or its observation "
                    "off is not allowed (ATen calls must stay observable)", ctx.line_of(m.start()))
            for m in _SWITCH.finditer(ctx.code)]


@native_check("c_aten_compute")
def _dispatch(ctx: NativeContext) -> Iterator[Finding]:
    # A6 / issue 23 class 5: ATen compute is judged on the built object (at::cpu::mm_out,
    # at::native::..., redispatch are refused there; at::matmul goes through the dispatcher, which the
    # runner observes). Here only what torch's headers also use and so leaves no telling symbol:
    # guards that exclude dispatch keys (the Python key hides ops from a TorchDispatchMode).
    yield from dispatch_switch_findings(ctx)


_SPACE = r"(?:__(?:device|global|host)__|__attribute__\s*\(\(\s*(?:device|global|host)\s*\)\)" \
         r"|__location__\s*\(\s*(?:device|global|host)\s*\))"
_QUALIFIER = re.compile(_SPACE)


def _device_spans(code: str) -> list[tuple[int, int]]:
    """(start, end) of the bodies of functions and lambdas declared __device__ or __global__ and
    not __host__, in a source nvcc compiles (their inline assembly is PTX; also after nvcc's
    preprocessor spelled them ``__attribute__((device))``), unless the source redefines them."""
    if re.search(r"#\s*(?:define|undef)\s+__(?:device|global|host|location|annotate)__\b", code):
        return []
    spans, stack, last_stmt = [], [], 0
    for i, ch in enumerate(code):
        if ch == "{":
            stack.append((i, code[last_stmt:i]))
            last_stmt = i + 1
        elif ch == "}":
            if stack:
                start, header = stack.pop()
                spaces = {m.group(0).replace(" ", "") for m in _QUALIFIER.finditer(header)}
                if spaces and not any("host" in q for q in spaces):
                    spans.append((start, i + 1))
            last_stmt = i + 1
        elif ch == ";":
            last_stmt = i + 1
    return spans


def run_native_checks(code: str, task_dtype: str = "float32", disabled: tuple[str, ...] = (),
                      language: str = "c++") -> list[Finding]:
    """Findings of every enabled check on one native source (as recorded, before preprocessing).
    ``language`` "cuda" for a source nvcc compiles (cuda_sources): inline PTX in device code is
    fine there. ``task_dtype`` is kept for the callers' signature; no text check depends on it (a
    precision downgrade is decided by the float64 comparison of the correctness gate)."""
    ctx = NativeContext.build(code, task_dtype, cuda=language == "cuda")
    findings = []
    for name, fn in NATIVE_CHECKS.items():
        if name not in disabled:
            findings.extend(fn(ctx))
    return findings
