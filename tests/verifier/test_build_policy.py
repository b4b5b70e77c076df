"""The hack gate's build tier and the build cache's trust, with the real compiler: checks on the
preprocessed candidate code and on undefined symbols (by loader: plain C for load_c, a pybind11
module for load_inline), the directive checks before preprocessing, honest C/C++ in everyday styles
built and passed, and cache entries that only ever hold what the monitor built and checked itself."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from policy_snippets import ATEN_CPU, CXX_NAMES_C, OMP_PARTIALS_C
from build_jobs import build_call

from verifier import cpu_native
from verifier.gates.hack_build import candidate_lines, check_units, include_findings, policy_gate, preprocessed_findings
from verifier.gates.hack_native import run_native_checks
from verifier.gates.native_symbols import classify, entity_path, symbol_findings, undefined_symbols
from verifier.backends.base import BuiltUnit
from verifier.sandbox import isolation
from verifier.backends.cpu import CpuBackend
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
    source = RELU + '#define CAT(a, b) a##b\n#define ASM CAT(__as, m__)\n\n' \
                    'extern "C" void attack() {\n    ASM volatile("nop");\n}\n'
    result, _ = _built(source, tmp_path)
    lines = {f.line for f in preprocessed_findings(result.preprocessed, "x")}
    assert lines == {6}


@pytest.mark.parametrize("attack, check", [
    ('extern "C" __attribute__((weak)) int PyRun_SimpleString(const char*);\n'
     'extern "C" void attack() { if (PyRun_SimpleString) PyRun_SimpleString("1"); }\n', "c_python_api"),
    ('extern "C" __attribute__((weak)) void* PyEval_GetBuiltins();\n'  # fine in a pybind11 module, not in load_c
     'extern "C" void* attack() { return PyEval_GetBuiltins ? PyEval_GetBuiltins() : 0; }\n', "c_python_api"),
    ('namespace at { struct Tensor; namespace cpu { __attribute__((weak)) Tensor& mm_out(Tensor&, const Tensor&, '
     'const Tensor&); } }\nextern "C" void attack(at::Tensor* c) { if (at::cpu::mm_out) at::cpu::mm_out(*c, *c, *c); }\n',
     "c_aten_compute"),
    ('#include <thread>\nextern "C" void attack() { std::thread([] {}).detach(); }\n', "c_threads"),
    ('#include <unistd.h>\nextern "C" long attack() { return fork(); }\n', "c_processes_and_signals"),
])
def test_load_c_objects_reach_neither_torch_nor_python(attack, check, tmp_path):
    """Issue 23 class 4/5: a ctypes kernel declaring CPython or ATen entry points (weak, so the link
    succeeds) is refused on its symbols, whatever the declaration's spelling."""
    _, findings = _built(RELU + attack, tmp_path)
    assert check in {f.check for f in findings}, findings


@pytest.mark.parametrize("source", [OMP_PARTIALS_C, CXX_NAMES_C], ids=["omp_partials_avx", "cxx_names"])
def test_honest_styles_build_and_pass(source, tmp_path):
    """OpenMP per-thread partials and reductions, AVX2 (AVX-512 where the machine has it), templates
    and lambdas, methods named clone/read/write/add/sum/open/kill, std::thread::hardware_concurrency."""
    _, findings = _built(RELU + source, tmp_path)
    assert findings == [], findings


def test_includes_outside_the_toolchain_are_refused():
    findings = include_findings(["/usr/include/stdio.h", "/etc/passwd", "/tmp/x/../../etc/hostname"], ROOTS, "src")
    assert [f.message.split("read ")[1].split(":")[0] for f in findings] == ["/etc/passwd", "/tmp/x/../../etc/hostname"]


def test_includes_reached_through_links_are_resolved(tmp_path):
    allowed = tmp_path / "toolchain"
    (allowed / "include").mkdir(parents=True)
    (allowed / "include" / "ok.h").write_text("")
    (allowed / "include" / "file_link.h").symlink_to("/etc/hostname")
    (allowed / "dir_link").symlink_to("/etc")
    names = [str(allowed / "include" / "ok.h"), str(allowed / "include" / "file_link.h"),
             str(allowed / "dir_link" / "hostname")]
    findings = include_findings(names, (str(allowed),), "src")
    assert [f.message.split("read ")[1].split(":")[0] for f in findings] == names[1:]


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
    ("_ZdlPvm", ""), ("_ZNSt6thread20hardware_concurrencyEv", ""),
    ("_ZN8pybind116detail11type_casterIN2at6TensorEvE4loadENS_6handleEb", ""),  # an identifier "load", not torch::load
    ("fopen", "c_files_and_network"), ("__open_2", "c_files_and_network"), ("dlsym", "c_files_and_network"),
    ("syscall", "c_processes_and_signals"), ("execve", "c_processes_and_signals"), ("clone", "c_processes_and_signals"),
    ("pthread_create", "c_threads"), ("getenv", "c_threads"), ("clock_gettime", "c_inline_asm_and_load_hooks"),
    ("rand", "c_rng"), ("PyRun_SimpleString", "c_python_api"), ("PyObject_CallObject", "c_python_api"),
    ("PyEval_GetGlobals", "c_python_api"), ("PyEval_GetBuiltins", ""), ("PyLong_AsLong", ""), ("THPDtypeType", ""),
    ("_ZN8pybind117module_6importEPKc", "c_python_api"),
    ("_ZNSt14basic_ofstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode", "c_files_and_network"),
    ("_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE", "c_threads"),
    ("_ZN5torch4saveERKN2at6TensorERKSs", "c_files_and_network"), ("getpid", "c_undefined_symbols"),
    ("_ZN7unknown3fooEv", "c_undefined_symbols"), ("cudaIpcOpenMemHandle", "c_undefined_symbols"),
    # ATen: through the dispatcher (observed by the runner) or past it (refused)
    ("_ZN2at4_ops6matmul4callERKNS_6TensorES4_", ""), ("_ZN2at4_ops5clone4callERKNS_6TensorESt8optionalIN3c1012MemoryFormatEE", ""),
    ("_ZN2at15get_num_threadsEv", ""), ("_ZN2at8internal14set_thread_numEi", ""), ("_ZN3c1011ParallelGuardC1Eb", ""),
    ("_ZN2at3cpu6mm_outERNS_6TensorERKS1_S4_", "c_aten_compute"),
    ("_ZN2at4_ops2mm10redispatchEN3c1014DispatchKeySetERKNS_6TensorES7_", "c_aten_compute"),
    ("_ZN2at6native7cpublas4gemmEv", "c_aten_compute"), ("_ZN2at3cpu17is_avx2_supportedEv", ""),
    ("_ZN2at20enableRecordFunctionEb", "c_aten_compute"), ("_ZN2at6launchESt8functionIFvvEE", "c_threads"),
    ("cblas_sgemm", "c_aten_compute"), ("cublasSgemm_v2", "c_aten_compute"),
])
def test_symbol_allowlist(symbol, check):
    assert classify(symbol) == check


@pytest.mark.parametrize("symbol", ["PyLong_AsLong", "PyEval_GetBuiltins", "_ZN2at4_ops6matmul4callERKNS_6TensorES4_",
                                    "_ZN8pybind116detail11type_casterIN2at6TensorEvE4loadENS_6handleEb"])
def test_a_load_c_kernel_references_neither_python_nor_torch(symbol):
    assert classify(symbol, "load_c") in ("c_python_api", "c_aten_compute")


@pytest.mark.parametrize("symbol, path", [
    ("_ZN2at4_ops2mm10redispatchEN3c1014DispatchKeySetERKNS_6TensorES7_", ("at", "_ops", "mm", "redispatch")),
    ("_ZNK2at10TensorBase8data_ptrIfEEPT_v", ("at", "TensorBase", "data_ptr")),
    ("_ZNSt6thread20hardware_concurrencyEv", ("std", "thread", "hardware_concurrency")),
    ("_ZN3c104impl23ExcludeDispatchKeyGuardC1ENS_14DispatchKeySetE", ("c10", "impl", "ExcludeDispatchKeyGuard", "<ctor>")),
    ("_ZTIN3c105ErrorE", ("c10", "Error")), ("_ZSt9terminatev", ("std", "terminate")), ("_Znwm", ("operator",)),
    ("_ZN3c106detail19maybe_wrap_dim_slowIlEET_S2_S2_b", ("c10", "detail", "maybe_wrap_dim_slow")),
])
def test_mangled_names_are_read_as_qualified_names(symbol, path):
    assert entity_path(symbol) == path


# Undefined symbols of a real load_inline extension (torch 2.13, g++ 12) built from policy_snippets.ATEN_CPU
# (at::parallel_for, AT_DISPATCH_FLOATING_TYPES, TORCH_CHECK, x.contiguous().clone(), a struct with add/sum/max,
# std::thread::hardware_concurrency) with torch's generated bindings: the CPython API a pybind11 module needs.
ATEN_EXTENSION_SYMBOLS = """GOMP_parallel PyBaseObject_Type PyByteArray_AsString PyByteArray_Size PyByteArray_Type
PyBytes_AsString PyBytes_AsStringAndSize PyBytes_Size PyCFunction_Type PyCMethod_New PyCapsule_GetContext
PyCapsule_GetName PyCapsule_GetPointer PyCapsule_New PyCapsule_SetContext PyCapsule_SetDestructor PyDict_Contains
PyDict_GetItemWithError PyDict_New PyDict_SetDefault PyDict_Type PyErr_Clear PyErr_Fetch PyErr_Format
PyErr_NormalizeException PyErr_Occurred PyErr_Restore PyErr_SetObject PyErr_SetString PyErr_WarnEx
PyErr_WriteUnraisable PyEval_AcquireThread PyEval_GetBuiltins PyEval_SaveThread PyExc_ImportError PyExc_TypeError
PyException_SetCause PyException_SetContext PyException_SetTraceback PyFrame_GetBack PyFrame_GetCode
PyFrame_GetLineNumber PyGILState_Check PyGILState_Ensure PyGILState_GetThisThreadState PyGILState_Release
PyInstanceMethod_New PyInstanceMethod_Type PyInterpreterState_GetDict PyList_Size PyMem_Calloc PyMem_Free
PyModuleDef_Init PyModule_AddObject PyModule_NewObject PyModule_Type PyNumber_Add PyObject_CallFunctionObjArgs
PyObject_ClearWeakRefs PyObject_Free PyObject_GC_UnTrack PyObject_GetAttrString PyObject_GetItem
PyObject_HasAttrString PyObject_IsInstance PyObject_Repr PyObject_SetAttrString PyObject_SetItem PyObject_Str
PyProperty_Type PyThreadState_Clear PyThreadState_DeleteCurrent PyThreadState_New PyThread_tss_create
PyThread_tss_get PyTuple_New PyTuple_SetItem PyType_FromSpec PyType_IsSubtype PyType_Ready PyType_Type
PyUnicode_AsEncodedString PyUnicode_AsUTF8AndSize PyUnicode_DecodeUTF8 PyUnicode_FromString PyWeakref_NewRef
Py_GetVersion _PyObject_GetDictPtr _PyObject_New _PyThreadState_UncheckedGet _PyType_Lookup _Py_Dealloc
_Py_NoneStruct THPDeviceType THPDtypeType PyFloat_AsDouble PyLong_AsLong PySequence_Check PySequence_Size
PyObject_GetIter PyIter_Next PyEval_RestoreThread _ZN2at15get_thread_numEv _ZN2at15get_num_threadsEv
_ZN2at16init_num_threadsEv _ZN2at18in_parallel_regionEv _ZN2at8internal14set_thread_numEi
_ZN2at4_ops10empty_like4callERKNS_6TensorESt8optionalIN3c1010ScalarTypeEES5_INS6_6LayoutEES5_INS6_6DeviceEES5_IbES5_INS6_12MemoryFormatEE
_ZN2at4_ops5clone4callERKNS_6TensorESt8optionalIN3c1012MemoryFormatEE _ZN3c1014ParallelGuardC1Eb
_ZN3c1014ParallelGuardD1Ev _ZN3c104impl23ExcludeDispatchKeyGuardC1ENS_14DispatchKeySetE
_ZN3c104impl23ExcludeDispatchKeyGuardD1Ev _ZN3c104impl32_force_tls_local_dispatch_key_setENS0_19LocalDispatchKeySetE
_ZTHN3c104impl26raw_local_dispatch_key_setE _ZN3c106detail14torchCheckFailEPKcS2_jS2_
_ZN5torch17PyWarningHandlerC1Ev _ZN5torch17PyWarningHandlerD1Ev
_ZN8pybind116detail11type_casterIN2at6TensorEvE4castERKS3_NS_19return_value_policyENS_6handleE
_ZNK2at10TensorBase21__dispatch_contiguousEN3c1012MemoryFormatE _ZNK2at10TensorBase8data_ptrIfEEPT_v
_ZNSt6thread20hardware_concurrencyEv _ZNSt13runtime_errorC1EPKc _ZTVN10__cxxabiv117__class_type_infoE _ZTIN3c105ErrorE
_Znwm _ZdlPvm __cxa_guard_acquire __gxx_personality_v0 _Unwind_Resume expf memcpy omp_get_thread_num""".split()


def test_a_real_extensions_symbols_pass():
    refused = {s: classify(s) for s in ATEN_EXTENSION_SYMBOLS if classify(s)}
    assert refused == {}


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("VERIFIER_SLOW_TESTS"), reason="~45-110 s torch extension build; "
                    "set VERIFIER_SLOW_TESTS=1 to run")
def test_a_real_load_inline_extension_is_judged_by_its_symbols(tmp_path):
    """Built by torch's own load_inline: the honest functions pass; the same module calling ATen's CPU
    kernel directly, redispatching, or the CPython API from its own lines is refused."""
    from torch.utils import cpp_extension

    cheats = ATEN_CPU + r"""
#include <ATen/ops/mm_cpu_dispatch.h>
torch::Tensor cheat_cpu(torch::Tensor a, torch::Tensor b) { auto c = torch::empty({a.size(0), b.size(1)}); at::cpu::mm_out(c, a, b); return c; }
torch::Tensor cheat_redispatch(torch::Tensor a, torch::Tensor b) { return at::_ops::mm::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), a, b); }
void cheat_python() { PyObject* g = PyEval_GetBuiltins(); (void)g; }
"""
    for name, source, functions in (("honest_ext", ATEN_CPU, ["relu_fwd", "softmax_rows"]),
                                    ("cheat_ext", cheats, ["relu_fwd", "cheat_cpu", "cheat_redispatch", "cheat_python"])):
        build = tmp_path / name
        build.mkdir()
        cpp_extension.load_inline(name=name, cpp_sources=source, functions=functions, extra_cflags=["-O2", "-fopenmp",
                                  "-save-temps"], extra_ldflags=["-fopenmp"], build_directory=str(build), verbose=False,
                                  with_cuda=False)
        text, includes = candidate_lines((build / "main.ii").read_text())
        unit = BuiltUnit(f"load_inline cpp_sources ({name})", text, includes, (str(build / f"{name}.so"),))
        findings = check_units([unit], (*isolation.SYSTEM_READ_EXEC, *isolation.runtime_read_exec(), str(tmp_path)))
        if name == "honest_ext":
            assert findings == [], findings
        else:
            refused = {f.message.split(" references ")[-1].split(",")[0] for f in findings if "references" in f.message}
            assert {f.check for f in findings} == {"c_aten_compute", "c_python_api"}, findings
            assert any("mm_out" in r for r in refused) and any("redispatch" in r for r in refused), refused
            assert symbol_findings(build / f"{name}.so", name, loader="load_c")  # never as a ctypes kernel


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


def test_a_build_in_progress_holds_its_key_until_it_ends(tmp_path):
    cache = BuildCache(tmp_path)
    key = "ef" * 32
    with cache.building(key, 5.0) as held:
        assert held
        with cache.building(key, 0.3) as second:  # another open of the lock file: waits, then gives up
            assert not second
        with cache.building("01" * 32, 0.3) as other:  # another key is not held up
            assert other
    with cache.building(key, 0.3) as after:
        assert after


def test_two_verifications_of_the_same_sources_at_once_build_them_once(tmp_path):
    """The second waits for the first build in progress and reads its entry (without the lock both compiled)."""
    args = {"source": RELU + "// built once\n", "functions": {"relu": "const float*, float*, int64"}}
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda _: build_call(CpuBackend(), "load_c", args, tmp_path), range(2)))
    assert all(o.ok for o in outcomes), [o.detail for o in outcomes]
    assert sorted(o.cached for o in outcomes) == [False, True]
    assert outcomes[0].path == outcomes[1].path


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
