"""Static policy on the candidate's C/C++ tokens (comments and string literals stripped first, so
words inside them never false-positive). A registry of small named checks, each with its exploit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

from verifier.gates.hack_python import TENSOR_COMPUTE, Finding

_COMMENTS_AND_STRINGS = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_TOKEN = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*|::|\S")


@dataclass(frozen=True)
class NativeContext:
    code: str  # comments and string literals replaced by spaces (line numbers kept)
    raw: str
    task_dtype: str

    @classmethod
    def build(cls, raw: str, task_dtype: str = "float32") -> "NativeContext":
        def blank(m: re.Match) -> str:
            text = m.group(0)
            if text.startswith(("//", "/*")):
                return re.sub(r"[^\n]", " ", text)
            return text[0] + re.sub(r"[^\n]", " ", text[1:-1]) + text[-1]
        return cls(_COMMENTS_AND_STRINGS.sub(blank, raw), raw, task_dtype)

    def tokens(self) -> Iterator[tuple[str, int, int]]:
        """(token, line, index into code)."""
        for m in _TOKEN.finditer(self.code):
            yield m.group(0), self.code.count("\n", 0, m.start()) + 1, m.start()

    def next_char(self, index: int) -> str:
        rest = self.code[index:].lstrip()
        return rest[:1]


NativeCheck = Callable[[NativeContext], Iterator[Finding]]
NATIVE_CHECKS: dict[str, NativeCheck] = {}


def native_check(name: str) -> Callable[[NativeCheck], NativeCheck]:
    def register(fn: NativeCheck) -> NativeCheck:
        NATIVE_CHECKS[name] = fn
        return fn
    return register


def _word_hits(ctx: NativeContext, words: set[str], check: str, why: str, call_only: bool = False) -> Iterator[Finding]:
    for tok, line, index in ctx.tokens():
        bare = tok.split("::")[-1]
        if tok in words or (bare in words and tok.startswith("std::")):
            if call_only and ctx.next_char(index + len(tok)) != "(":
                continue
            yield Finding(check, f"{tok}: {why}", line)


@native_check("c_processes_and_signals")
def _processes(ctx: NativeContext) -> Iterator[Finding]:
    # D6/D7/D5: fork bombs, exec, signalling the verifier, early exit with a fake result.
    words = {"fork", "vfork", "clone", "clone3", "execl", "execlp", "execle", "execv", "execvp", "execve",
             "execvpe", "system", "popen", "posix_spawn", "posix_spawnp", "kill", "killpg", "raise",
             "syscall", "ptrace", "exit", "_exit", "_Exit", "abort", "quick_exit", "signal", "sigaction",
             "setrlimit", "prlimit", "daemon", "setsid", "setpgid"}
    yield from _word_hits(ctx, words, "c_processes_and_signals", "processes, signals and exits are not allowed", call_only=True)


@native_check("c_threads")
def _threads(ctx: NativeContext) -> Iterator[Finding]:
    # C2: work on a detached thread finishes after the timer stops; thread budget games (C7).
    words = {"std::thread", "std::jthread", "std::async", "pthread_create", "pthread_detach",
             "omp_set_num_threads", "omp_set_dynamic", "sched_setaffinity", "pthread_setaffinity_np",
             "num_threads", "thrd_create", "setenv", "putenv", "unsetenv", "getenv"}
    yield from _word_hits(ctx, words, "c_threads", "threads beyond the OpenMP pool and thread-budget changes are not allowed")


@native_check("c_files_and_network")
def _files(ctx: NativeContext) -> Iterator[Finding]:
    # D4/D6: reading expected outputs or the harness, talking to another process.
    calls = {"fopen", "freopen", "open", "openat", "creat", "mmap", "shm_open", "socket", "connect", "dlopen",
             "dlsym", "opendir", "readlink", "unlink", "rename", "mkdir", "fdopen", "read", "write"}
    types = {"ifstream", "ofstream", "fstream", "std::ifstream", "std::ofstream", "std::fstream", "FILE"}
    why = "file, network and dynamic-loading access is not allowed"
    yield from _word_hits(ctx, calls, "c_files_and_network", why, call_only=True)
    yield from _word_hits(ctx, types, "c_files_and_network", why)


_DIRECTIVE_VIEW = re.compile(r'//[^\n]*|/\*.*?\*/|("(?:\\.|[^"\\\n])*")', re.S)
_DIRECTIVE = re.compile(r"\s*(?:#|%:)\s*(include_next|include|import|embed|line\b|\d)")


def directive_lines(raw: str) -> list[str]:
    """Lines as the preprocessor reads directives: line splices joined, comments gone, strings kept."""
    joined = raw.replace("\\\n", "")
    return _DIRECTIVE_VIEW.sub(lambda m: m.group(1) or " ", joined).splitlines()


@native_check("c_includes")
def _includes(ctx: NativeContext) -> Iterator[Finding]:
    # D4: `#include "/abs/path"` reads any visible file at compile time; headers for threads/processes.
    # A computed `#include MACRO`, #embed and #include_next read files too; #line and line markers
    # (`# 1 "/usr/include/x.h" 3`) relabel the candidate's code as a system header's.
    banned = {"thread", "pthread.h", "future", "fstream", "dlfcn.h", "signal.h", "csignal", "spawn.h",
              "unistd.h", "random", "sched.h", "sys/", "filesystem", "fcntl.h", "threads.h"}
    for lineno, line in enumerate(directive_lines(ctx.raw), 1):
        directive = _DIRECTIVE.match(line)
        if directive is None:
            continue
        word = directive.group(1)
        if word != "include":
            what = "line markers" if word.isdigit() else f"#{word} directives"
            yield Finding("c_includes", f"{what} are not allowed", lineno)
            continue
        m = re.match(r'\s*(?:#|%:)\s*include\s*([<"])([^>"]*)[>"]', line)
        if not m:
            yield Finding("c_includes", "computed #include (a macro naming the file) is not allowed", lineno)
            continue
        header = m.group(2).strip()
        if m.group(1) == '"':
            yield Finding("c_includes", f'#include "{header}": only <system> headers are allowed', lineno)
        elif header in banned or header.startswith("sys/"):
            yield Finding("c_includes", f"#include <{header}> is not allowed", lineno)


@native_check("c_inline_asm_and_load_hooks")
def _asm(ctx: NativeContext) -> Iterator[Finding]:
    # D6/C4: inline assembly can issue syscalls; constructors run at load time outside forward;
    # symbol interposition replaces timers.
    for tok, line, _ in ctx.tokens():
        if tok in ("asm", "__asm__", "__asm", "constructor", "destructor", "__attribute_used__", "visibility"):
            yield Finding("c_inline_asm_and_load_hooks", f"{tok} is not allowed", line)
        if tok in ("clock_gettime", "gettimeofday", "perf_counter", "rdtsc", "__rdtsc", "time", "clock"):
            yield Finding("c_inline_asm_and_load_hooks", f"{tok}: timers are not allowed in kernels", line)


@native_check("c_rng")
def _rng(ctx: NativeContext) -> Iterator[Finding]:
    # A13: random numbers in a deterministic kernel (seed games, nondeterminism).
    words = {"rand", "srand", "rand_r", "random", "drand48", "std::mt19937", "std::random_device", "mt19937",
             "random_device", "std::default_random_engine"}
    yield from _word_hits(ctx, words, "c_rng", "random numbers are not allowed")


@native_check("c_aten_compute")
def _aten(ctx: NativeContext) -> Iterator[Finding]:
    # A6: ATen compute hidden in C++ (at::matmul, torch::relu, x.sum()) for load_inline candidates.
    allowed = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
               "full_like", "Tensor", "TensorOptions", "ScalarType", "Device", "IntArrayRef", "ArrayRef",
               "Scalar", "kFloat", "kFloat32", "kDouble", "kFloat64", "kInt", "kInt32", "kLong", "kInt64",
               "kHalf", "kBFloat16", "kCPU", "kBool", "kByte", "dtype", "device", "TORCH_CHECK", "from_blob",
               "Half", "BFloat16", "Layout", "kStrided", "MemoryFormat", "optional", "nullopt", "string",
               "vector", "string_view", "IValue", "Generator", "indexing", "NoGradGuard", "InferenceMode"}
    for tok, line, index in ctx.tokens():
        head, _, name = tok.partition("::")
        if head in ("at", "torch", "c10", "aten") and name and name.split("::")[0] not in allowed:
            if name.split("::")[-1] in allowed:
                continue
            yield Finding("c_aten_compute", f"{tok}: ATen/torch compute in native code is not allowed", line)
        elif tok in TENSOR_COMPUTE and index > 0 and ctx.code[index - 1] in ".>" and ctx.next_char(index + len(tok)) == "(":
            yield Finding("c_aten_compute", f".{tok}(): tensor compute in native code is not allowed", line)


@native_check("c_precision_downgrade")
def _precision(ctx: NativeContext) -> Iterator[Finding]:
    # A10: computing an fp32 task in half precision to pass a loose tolerance faster.
    if ctx.task_dtype != "float32":
        return
    words = {"__fp16", "_Float16", "__bf16", "half", "__half", "__float2half", "at::Half", "c10::Half",
             "at::BFloat16", "c10::BFloat16", "_mm256_cvtps_ph", "_mm512_cvtps_ph", "_cvtss_sh"}
    yield from _word_hits(ctx, words, "c_precision_downgrade", "half precision in a float32 task is not allowed")


def run_native_checks(code: str, task_dtype: str = "float32", disabled: tuple[str, ...] = ()) -> list[Finding]:
    ctx = NativeContext.build(code, task_dtype)
    findings = []
    for name, fn in NATIVE_CHECKS.items():
        if name not in disabled:
            findings.extend(fn(ctx))
    return findings
