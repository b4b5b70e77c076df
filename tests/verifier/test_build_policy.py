"""The hack gate's build tier and the build cache's trust, with the real compiler: checks on the
preprocessed candidate code and on undefined symbols, the directive checks before preprocessing, and
cache entries that only ever hold what the monitor built and checked itself."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from build_jobs import build_call

from verifier import cpu_native
from verifier.backends.base import BuiltUnit
from verifier.backends.cpu import CpuBackend
from verifier.gates.hack_build import candidate_lines, check_units, include_findings, policy_gate, preprocessed_findings
from verifier.gates.hack_native import run_native_checks
from verifier.gates.native_symbols import classify, undefined_symbols
from verifier.monitor.build_cache import BuildCache

RELU = 'extern "C" void relu(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0; }\n'
ROOTS = ("/usr", "/lib")


def _built(source: str, tmp_path) -> tuple[cpu_native.BuildResult, list]:
    result = cpu_native.build(source, tmp_path)
    assert result.ok, result.diagnostics
    unit = BuiltUnit("load_c source", result.preprocessed, result.includes, (result.library,))
    return result, check_units([unit], (*ROOTS, str(tmp_path)))


@pytest.mark.parametrize("attack, check", [
    ('#define CAT(a, b) a##b\nextern "C" int CAT(unl,ink)(const char*);\n'
     'extern "C" void attack() { CAT(unl,ink)("/x"); }\n', "c_files_and_network"),
    ('#include <cstdio>\n#define NAME __CONCAT(fop, en)\n'  # glibc's own pasting macro, from a system header
     'extern "C" void attack() { NAME("/x", "w"); }\n', "c_files_and_network"),
    ('#define CAT(a, b) a##b\n#define ASM CAT(__as, m__)\nextern "C" void attack() { ASM volatile("nop"); }\n',
     "c_inline_asm_and_load_hooks"),
    ('#define CAT(a, b) a##b\nextern "C" long CAT(sys,call)(long, ...);\n'
     'extern "C" void attack() { CAT(sys,call)(39); }\n', "c_processes_and_signals"),
])
def test_names_built_by_the_preprocessor_are_refused(attack, check, tmp_path):
    assert not [f for f in run_native_checks(RELU + attack) if f.check == check]  # invisible before preprocessing
    _, findings = _built(RELU + attack, tmp_path)
    assert any(f.check == check for f in findings), findings


def test_findings_name_the_line_of_the_candidate_source(tmp_path):
    source = RELU + '#define CAT(a, b) a##b\nextern "C" int CAT(ren,ame)(const char*, const char*);\n\n' \
                    'extern "C" void attack() {\n    CAT(ren,ame)("/a", "/b");\n}\n'
    result, _ = _built(source, tmp_path)
    lines = {f.line for f in preprocessed_findings(result.preprocessed, "x")}
    assert 6 in lines  # the call; line 3 is the declaration


def test_includes_outside_the_toolchain_are_refused():
    findings = include_findings(["/usr/include/stdio.h", "/etc/passwd", "/tmp/x/../../etc/hostname"], ROOTS, "src")
    assert [f.message.split("read ")[1].split(":")[0] for f in findings] == ["/etc/passwd", "/tmp/x/../../etc/hostname"]


def test_candidate_lines_keep_line_numbers_and_list_the_included_files():
    text = ('# 0 "k.cpp"\n# 0 "<built-in>"\n# 1 "k.cpp"\n# 1 "/usr/include/math.h" 1 3 4\nint hidden;\n'
            '# 2 "k.cpp" 2\nint a;\n\nint b;\n')
    kept, includes = candidate_lines(text)
    assert kept.splitlines() == ["", "int a;", "", "int b;"] and includes == ("/usr/include/math.h",)
    assert candidate_lines(text, first_line=3)[0].splitlines() == ["", "", "", "int b;"]


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils' nm")
def test_undefined_symbols_match_nm(tmp_path):
    result = cpu_native.build(RELU + '#include <cmath>\n#include <cstdio>\nextern "C" float f(float x) { '
                                     'printf("%f", x); return std::exp(x); }\n', tmp_path)
    nm = subprocess.run(["nm", "-D", "--undefined-only", result.library], capture_output=True, text=True).stdout
    expected = {line.split()[-1].split("@")[0] for line in nm.splitlines() if line.strip()}
    assert set(undefined_symbols(result.library)) == expected and "expf" in expected


@pytest.mark.parametrize("symbol, check", [
    ("expf", ""), ("__expf_finite", ""), ("_ZGVdN8v_expf", ""), ("__memcpy_chk", ""), ("GOMP_parallel", ""),
    ("_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4findEPKcmm", ""), ("_Znwm", ""), ("atexit", ""),
    ("_ZN8pybind116detail11type_casterIN2at6TensorEvE4loadENS_6handleEb", ""),  # an identifier "load", not torch::load
    ("fopen", "c_files_and_network"), ("__open_2", "c_files_and_network"), ("dlsym", "c_files_and_network"),
    ("syscall", "c_processes_and_signals"), ("execve", "c_processes_and_signals"), ("pthread_create", "c_threads"),
    ("getenv", "c_threads"), ("clock_gettime", "c_inline_asm_and_load_hooks"), ("rand", "c_rng"),
    ("PyRun_SimpleString", "c_processes_and_signals"), ("_ZN8pybind117module_6importEPKc", "c_processes_and_signals"),
    ("_ZNSt14basic_ofstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode", "c_files_and_network"),
    ("_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE", "c_threads"),
    ("_ZN5torch4saveERKN2at6TensorERKSs", "c_files_and_network"), ("getpid", "c_undefined_symbols"),
    ("_ZN7unknown3fooEv", "c_undefined_symbols"), ("cudaIpcOpenMemHandle", "c_undefined_symbols"),
])
def test_symbol_allowlist(symbol, check):
    assert classify(symbol) == check


def test_directives_that_read_or_relabel_files_are_refused_before_preprocessing():
    source = ('#define H </etc/passwd>\n#include H\n# 1 "/usr/include/x.h" 3\n#line 9\n#embed "/x"\n'
              '#include_next <cmath>\n#/**/include H\n%:include H\n#include <cmath>\n')
    lines = sorted(f.line for f in run_native_checks(source) if f.check == "c_includes")
    assert lines == [2, 3, 4, 5, 6, 7, 8]


def test_policy_gate_is_a_failed_hack_gate():
    gate = policy_gate(["a", "b", "c", "d", "e", "f"], 0.1)
    assert gate.name == "hack" and not gate.passed and gate.reason == "static policy: a"
    assert gate.detail.endswith("... and 1 more")


# ---- the build cache and the build service -------------------------------------------------------

def test_cache_round_trip_and_damaged_or_linked_entries_are_dropped(tmp_path):
    cache = BuildCache(tmp_path)
    key = "ab" * 32
    assert cache.get(key) is None and cache.put(key, {"kernel.so": b"lib", "units.json": b"{}"})
    assert cache.get(key) == {"kernel.so": b"lib", "units.json": b"{}"}
    stored = next(tmp_path.rglob("kernel.so"))
    stored.write_bytes(b"damaged at rest")
    assert cache.get(key) is None and not stored.exists()  # dropped: the next build replaces it
    assert cache.put(key, {"kernel.so": b"lib", "units.json": b"{}"})
    stored = next(tmp_path.rglob("kernel.so"))
    secret = tmp_path / "secret"
    secret.write_bytes(b"lib")  # the same bytes, reached through a link
    stored.unlink()
    stored.symlink_to(secret)
    assert cache.get(key) is None


def test_cache_keys_and_names_are_the_monitors_own_shape(tmp_path):
    cache = BuildCache(tmp_path)
    with pytest.raises(ValueError):
        cache.get("../escape")
    with pytest.raises(ValueError):
        cache.put("cd" * 32, {"../x": b"1"})
    assert not list(tmp_path.rglob("x"))


def test_the_service_builds_checks_caches_and_places_for_the_runner(tmp_path):
    first = build_call(CpuBackend(), "load_c", {"source": RELU, "functions": {"relu": "const float*, float*, int64"}}, tmp_path)
    assert first.ok and not first.cached, first.detail
    placed = os.path.join(first.path, "kernel.so")
    assert os.path.isfile(placed) and oct(os.stat(placed).st_mode)[-3:] == "644"
    again = build_call(CpuBackend(), "load_c", {"source": RELU, "functions": {"relu": "const float*, float*, int64"}},
                       tmp_path)
    assert again.ok and again.cached and again.path == first.path
    other = build_call(CpuBackend(), "load_c", {"source": RELU + "// changed\n", "functions": {"relu": "float*"}}, tmp_path)
    assert other.ok and not other.cached and other.path != first.path  # keyed by what was built


def test_the_service_refuses_what_the_policy_refuses_and_reports_compile_errors(tmp_path):
    attack = RELU + '#define CAT(a, b) a##b\nextern "C" int CAT(unl,ink)(const char*);\nextern "C" void x() { CAT(unl,ink)("/x"); }\n'
    refused = build_call(CpuBackend(), "load_c", {"source": attack, "functions": {"relu": "float*"}}, tmp_path)
    assert not refused.ok and refused.gate == "hack" and "unlink" in refused.detail and not refused.path
    broken = build_call(CpuBackend(), "load_c", {"source": "int f( {", "functions": {"f": "int"}}, tmp_path)
    assert not broken.ok and broken.gate == "compile" and "error" in broken.detail
    assert "/tmp/evokernel-build" not in broken.detail  # the builder's private directory is not shown
    bad_args = build_call(CpuBackend(), "load_c", {"source": RELU, "functions": "relu"}, tmp_path)
    assert not bad_args.ok and bad_args.gate == "compile" and "functions must be" in bad_args.reason


def test_load_inline_flags_are_filtered_by_the_allowlist():
    from verifier.backends.cpu_builds import load_inline_job

    job = load_inline_job({"name": "ext", "cpp_sources": "int f();", "functions": ["f"],
                           "extra_cflags": ["-O3", "-fopenmp", "-include", "/etc/passwd", "-fplugin=x.so", "-DN=4"],
                           "extra_ldflags": ["-lgomp", "-Wl,--wrap=malloc"]})
    assert '"extra_cflags": ["-O3", "-fopenmp", "-DN=4"]' in dict(job.files)["job.json"]
    assert "-include /etc/passwd -fplugin=x.so" in job.note and "-Wl,--wrap=malloc" in job.note
