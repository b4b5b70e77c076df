"""The vocabulary of the built-object checks (:mod:`verifier.gates.native_symbols`): which C, C++
and CPython symbols a kernel may reference, by loader.

* ``load_c``: a plain C ABI library called through ctypes. libc math/memory/formatting, OpenMP,
  the C++ runtime and standard library; nothing of torch or CPython (it needs neither, and the
  CPython API in the runner's process reaches the interpreter: issue 23 class 4).
* ``extension`` (``load_inline``, cpp or cuda): a pybind11 module. Also ATen/c10/torch/pybind11
  and the CPython API a pybind11 module references (measured on real ``load_inline`` builds), minus
  what bypasses the runner's ATen observation (backend kernels called directly, redispatch,
  dispatch-key and RecordFunction switches, vendor BLAS/DNN libraries) and the CPython calls that
  run code, import, reach frames or read and write attributes.
* ``vendor`` (e.g. the Ascend C runtime, ``strict_symbols=False``): only the known-dangerous names.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re

# -- C: libc and friends ---------------------------------------------------------------------------

MATH = ("sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 exp10 expm1 log log2 log10 "
        "log1p logb pow sqrt cbrt hypot fabs floor ceil round trunc rint nearbyint lround llround lrint llrint "
        "fmod remainder remquo fmin fmax fma fdim erf erfc tgamma lgamma lgamma_r frexp ldexp modf copysign "
        "nextafter nexttoward scalbn scalbln ilogb nan sincos significand").split()
C_ALLOWED = set("""malloc calloc realloc free aligned_alloc posix_memalign memalign valloc memcpy memmove memset
memcmp memchr bzero strlen strnlen strcmp strncmp strcpy strncpy strcat strncat strchr strrchr strstr strdup
strtol strtoll strtoul strtoull strtod strtof strtold atoi atol atoll atof abs labs llabs div ldiv qsort bsearch
printf puts putchar fputs fputc fprintf fwrite fflush vprintf vfprintf snprintf sprintf vsnprintf vsprintf
stdout stderr __errno_location __assert_fail __stack_chk_fail abort atexit __cxa_finalize __cxa_atexit __gmon_start__
_ITM_deregisterTMCloneTable _ITM_registerTMCloneTable __tls_get_addr __dso_handle __gxx_personality_v0
__dynamic_cast __libc_single_threaded __isnan __isnanf __isinf __isinff __finite __finitef __fpclassify
__fpclassifyf __signbit __signbitf pthread_mutex_lock pthread_mutex_unlock pthread_mutex_trylock pthread_once
pthread_key_create pthread_key_delete pthread_getspecific pthread_setspecific pthread_self pthread_equal
sched_yield""".split())
C_PREFIXES = ("__cxa_", "_Unwind_", "GOMP_", "__kmpc_", "omp_", "_ZGV", "__cuda", "cuda", "__nv_",
              "Sleef_")  # SLEEF: vector math (linked for a source that includes <sleef.h>)
# denied outright, by the check each belongs to (anything else unknown is c_undefined_symbols)
C_DENIED = {
    "c_files_and_network": r"f?open\w*|creat|fdopen|freopen|tmpfile|mkstemp\w*|unlink(at)?|rename(at)?|remove|"
                           r"(f|l)?stat\w*|truncate|ftruncate|mkdir|rmdir|opendir|readdir|scandir|chdir|chmod|chown|"
                           r"link|symlink|readlink|f?read|pread\w*|f?write|pwrite\w*|fgets|fscanf|getline|mmap\w*|"
                           r"munmap|mprotect|shm_\w+|socket|connect|bind|listen|accept\w*|send\w*|recv\w*|dlopen|"
                           r"dlsym|dlvsym|dladdr|dl_iterate_phdr|dlmopen|getaddrinfo|gethostbyname|ioctl|fcntl|dup\d?",
    "c_processes_and_signals": r"fork|vfork|clone\d?|exec\w*|system|popen|posix_spawnp?|kill|killpg|raise|syscall|"
                               r"ptrace|exit|_exit|_Exit|quick_exit|signal|sigaction|setrlimit|prlimit\w*|daemon|"
                               r"setsid|setpgid|setuid|setgid|process_vm_\w+|prctl|seccomp|getppid",
    "c_threads": r"pthread_create|pthread_detach|pthread_attr_\w+|thrd_create|sched_setaffinity|"
                 r"pthread_setaffinity_np|omp_set_num_threads|omp_set_dynamic|setenv|putenv|unsetenv|getenv|"
                 r"clearenv|secure_getenv|cudaStreamCreate\w*|cuStreamCreate\w*|cudaStreamBeginCapture\w*|"
                 r"cudaGraphLaunch|cuGraphLaunch",
    "c_inline_asm_and_load_hooks": r"clock_gettime|gettimeofday|time|clock|__rdtsc|times|getrusage",
    "c_rng": r"s?rand(om)?|rand_r|[dlmejn]rand48|getrandom|getentropy|arc4random\w*",
    # library compute the runner's ATen observation never sees (BLAS, oneDNN/MKL, cuBLAS, cuDNN...)
    "c_aten_compute": r"cblas_\w+|[sdcz](gemm|gemv|axpy|dot|syrk|trsm)_?|mkl_\w+|dnnl_\w+|cublas\w*|cudnn\w*|"
                      r"cufft\w*|cusparse\w*|cusolver\w*",
}

# -- C++ -----------------------------------------------------------------------------------------

CXX_NAMESPACES = {"load_c": {"std", "__cxxabiv1", "__gnu_cxx", "operator"},  # operator: global new/delete
                  "extension": {"std", "__cxxabiv1", "__gnu_cxx", "operator", "at", "c10", "torch", "pybind11",
                                "caffe2"}}
# Dispatch-key switches: torch's headers use them inline (torch::tensor, c10::InferenceMode), so every
# extension references them; the candidate's own lines may not (they hide ATen calls from an
# observer on the Python dispatch key; a RecordFunction observer still sees them).
DISPATCH_SWITCHES = {"ExcludeDispatchKeyGuard", "IncludeDispatchKeyGuard", "ForceDispatchKeyGuard",
                     "tls_set_dispatch_key_excluded", "tls_set_dispatch_key_included", "raw_local_dispatch_key_set",
                     "_force_tls_local_dispatch_key_set", "tls_local_dispatch_key_set", "LocalDispatchKeySet",
                     "AutoDispatchBelowAutograd", "AutoDispatchBelowADInplaceOrView", "AutoNonVariableTypeMode",
                     "AutoDispatchSkipFunctionalize", "TorchDispatchModeTLS", "PythonDispatcherTLS",
                     "DisableRecordFunctionGuard", "RecordFunctionGuard", "enableRecordFunction", "redispatch"}
TORCH_NAMESPACES = {"at", "c10", "torch", "pybind11", "caffe2"}
# Identifiers anywhere in an entity's qualified name, by check.
CXX_DENIED_PARTS = {
    "c_files_and_network": {"basic_ofstream", "basic_ifstream", "basic_fstream", "basic_filebuf", "__basic_file",
                            "filesystem", "from_file", "MapAllocator", "RefcountedMapAllocator", "serialize",
                            "PyTorchStreamReader", "PyTorchStreamWriter", "FileAdapter", "jit"},
    "c_threads": {"jthread", "set_num_threads", "set_num_interop_threads", "launch", "intraop_launch",
                  "intraop_launch_future", "ThreadPool", "TaskThreadPool", "PTThreadPool", "getStreamFromPool"},
    "c_rng": {"random_device", "manual_seed"},
    "c_inline_asm_and_load_hooks": {"system_clock", "steady_clock", "high_resolution_clock"},
    # calls past the dispatcher's observation (redispatch, kernels by handle) or switching it off;
    # the dispatch-key guards torch's own headers use everywhere are judged in the candidate's lines
    "c_aten_compute": {"redispatch", "redispatch_boxed", "redispatchBoxed", "TorchDispatchModeTLS",
                       "PythonDispatcherTLS", "PythonTorchFunctionTLS", "enableRecordFunction", "removeCallback",
                       "clearCallbacks",
                       "clearGlobalCallbacks", "clearThreadLocalCallbacks", "disableCallback", "reenableCallback",
                       "addGlobalCallback", "addThreadLocalCallback", "set_record_function_tls_",
                       "get_record_function_tls_", "setThreadLocalState", "Dispatcher", "OperatorHandle",
                       "KernelFunction", "BoxedKernel"},
    "c_python_api": {"import", "eval", "exec", "eval_file", "globals", "getattr", "setattr", "delattr"},
}
# std::thread members that start or hand off a thread; the rest (hardware_concurrency) are queries.
STD_THREAD_STARTS = {"_M_start_thread", "detach", "join", "_State", "_M_thread_deps_never_run"}
TORCH_IO_PATHS = {("torch", "save"), ("torch", "load")}  # torch::save / torch::load (pybind's "load" is a caster)
# ATen namespaces of per-backend kernels that run without the dispatcher: every name refused.
ATEN_DIRECT = {"native", "meta", "redispatch", "compositeexplicitautograd", "compositeexplicitautogradnonfunctional",
               "compositeimplicitautograd", "compositeimplicitautogradnestedtensor", "sparsecpu", "sparsecuda",
               "quantizedcpu", "quantizedcuda", "mkldnn", "nestedtensorcpu", "nestedtensorcuda", "sparsecsrcpu",
               "sparsecsrcuda", "mps", "xpu"}
# ATen namespaces holding both kernels (at::cpu::mm_out) and plumbing (at::cpu::is_avx2_supported,
# at::cuda::getCurrentDeviceProperties): an ATen operator's name is refused.
ATEN_MIXED = {"cpu", "cuda"}
_OP_SUFFIX = re.compile(r"(?:_symint)?(?:_outf|_out)?_?$")

# -- CPython -------------------------------------------------------------------------------------

# Referenced by every pybind11/torch extension module (real load_inline builds of functions taking
# tensors, ints, floats, bools, lists, optionals, strings, dtypes and devices, with and without
# PYBIND11_MODULE): allowed in an extension's object, refused in the candidate's own lines.
PYBIND_NEEDS = set("""PyEval_GetBuiltins PyEval_AcquireThread PyEval_SaveThread PyEval_RestoreThread
PyObject_CallFunctionObjArgs PyFrame_GetBack PyFrame_GetCode PyFrame_GetLineNumber PyThreadState_Clear
PyThreadState_DeleteCurrent PyThreadState_New _PyThreadState_UncheckedGet PyInterpreterState_GetDict
PyObject_GetAttrString PyObject_SetAttrString PyObject_HasAttrString _PyType_Lookup _PyObject_GetDictPtr
PyObject_GetItem PyObject_SetItem""".split()) | {
    # and on Python 3.12 and newer, pybind11 3's subinterpreter support and 3.13's thread-state accessor (seen in
    # a real CUDA extension's build with torch 2.11 on Python 3.12, on an H200, 2026-11-30)
    "PyInterpreterState_Get", "PyInterpreterState_Main", "PyThreadState_Get", "PyThreadState_GetUnchecked"}
# CPython calls that run code, import, reach frames or globals, or read and write attributes.
PY_DENIED = re.compile(r"_?(?:PyObject_(?:Call|Vectorcall|GetAttr|SetAttr|DelAttr|GenericGetAttr|GenericSetAttr|"
                       r"GenericGetDict|Dir|MakeTpCall)|PyVectorcall_|PyEval_|PyRun_|PyImport_|Py_CompileString|"
                       r"PyCode_|PyFunction_|PyFrame_|PyThreadState_|PyInterpreterState_|PySys_|PyMarshal_|PyFile_|"
                       r"PyOS_|Py_Exit|Py_Main|Py_RunMain|Py_Initialize|Py_Finalize|Py_AddPendingCall|Py_AtExit|"
                       r"PyErr_SetInterrupt|PyCFunction_(?:GetFunction|GetSelf|Call)|PyMethod_(?:Function|Self)|"
                       r"PyInstanceMethod_Function|PyType_GetSlot|PyModule_GetDict|PyUnstable_|PyGC_|"
                       r"PyObject_AsFileDescriptor|_PyType_Lookup|_PyObject_GetDictPtr)")
PY_PREFIXES = ("Py", "_Py", "THP")  # THP: torch's Python types (THPDtypeType...) its casters reference


@functools.lru_cache(maxsize=1)
def aten_ops_dir() -> str:
    """torch's ATen/ops include directory (one set of headers per operator and backend, e.g.
    mm_cpu_dispatch.h); "" when torch's headers cannot be found."""
    spec = importlib.util.find_spec("torch")
    for root in (spec.submodule_search_locations or []) if spec else []:
        ops = os.path.join(root, "include", "ATen", "ops")
        if os.path.isdir(ops):
            return ops
    return ""


def is_aten_kernel(namespace: str, name: str) -> bool:
    """Whether ``at::<namespace>::<name>`` is an operator's backend kernel (at::cpu::mm_out) rather
    than plumbing (at::cpu::is_avx2_supported). Without torch's headers every name counts."""
    ops = aten_ops_dir()
    if not ops:
        return not name.startswith(("is_", "get", "L1", "L2", "init_", "warp_size", "current_device"))
    bases = {name, _OP_SUFFIX.sub("", name), name.rstrip("_")}
    return any(os.path.exists(os.path.join(ops, f"{base}_{namespace}_dispatch.h")) for base in bases if base)
