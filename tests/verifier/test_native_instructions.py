"""The built object's raw system call instructions (verifier.gates.native_instructions): inline
assembly spelled through macros has no symbol, but its instruction is in the object."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from verifier.gates.native_instructions import CHECK, system_call_findings

pytestmark = pytest.mark.skipif(not (shutil.which("objdump") and shutil.which("gcc")), reason="needs gcc and objdump")

PASTED_SYSCALL = r'''
#define CAT(a, b) a##b
#define ASM CAT(__as, m__)
static long raw3(long n, long a, long b, long c) {
    long r; ASM volatile ("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory"); return r;
}
void attack(void) { raw3(1, 1, (long)"x", 1); }
'''
HONEST = r'''
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
void kernel(const float* x, float* y, long n) {
    #pragma omp parallel for simd
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? expf(x[i]) : 0.0f;
    if (n < 0) fprintf(stderr, "negative size\n");  /* libc's calls are libc's, not the object's */
}
'''


def _built(tmp_path, name: str, source: str):
    (tmp_path / f"{name}.c").write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", str(tmp_path / f"{name}.c"),
                    "-o", str(out)], check=True)
    return out


def test_a_raw_system_call_is_found_however_its_text_is_spelled(tmp_path):
    (finding,) = system_call_findings(_built(tmp_path, "attack", PASTED_SYSCALL), "load_c source")
    assert finding.check == CHECK and "raw system call instruction (syscall at 0x" in finding.message


def test_honest_code_and_a_disabled_check_give_nothing(tmp_path):
    assert system_call_findings(_built(tmp_path, "honest", HONEST), "load_c source") == []
    assert system_call_findings(_built(tmp_path, "attack", PASTED_SYSCALL), "load_c source", (CHECK,)) == []
