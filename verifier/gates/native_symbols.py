"""The undefined symbols of a built object, checked against an allowlist: whatever spelling the
source used (macros, token pasting, aliases), a call into libc for files, processes, sockets,
dynamic loading or raw system calls leaves the symbol's name in the object.

Allowed: math (libm, libmvec, SLEEF), memory and string functions, formatted output to stdout/stderr,
OpenMP, the C++ runtime and the namespaces of the C++ standard library, ATen/c10/torch and
pybind11 minus the parts that reach files, threads or processes, and the CPython API that a
``load_inline`` module uses (not the parts that run code or import modules). Everything else is
refused, named after the static check it belongs to, so ``disabled_checks`` turns both off.

The objects are read with a small ELF64 reader (.dynsym of a shared object, .symtab of a
relocatable object); no tool runs.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from verifier.gates.hack_python import Finding

SHN_UNDEF, SHT_SYMTAB, SHT_DYNSYM = 0, 2, 11
_MATH = ("sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 exp10 expm1 log log2 log10 "
         "log1p logb pow sqrt cbrt hypot fabs floor ceil round trunc rint nearbyint lround llround lrint llrint "
         "fmod remainder remquo fmin fmax fma fdim erf erfc tgamma lgamma lgamma_r frexp ldexp modf copysign "
         "nextafter nexttoward scalbn scalbln ilogb nan sincos significand").split()
_C_ALLOWED = set("""malloc calloc realloc free aligned_alloc posix_memalign memalign valloc memcpy memmove memset
memcmp memchr bzero strlen strnlen strcmp strncmp strcpy strncpy strcat strncat strchr strrchr strstr strdup
strtol strtoll strtoul strtoull strtod strtof strtold atoi atol atoll atof abs labs llabs div ldiv qsort bsearch
printf puts putchar fputs fputc fprintf fwrite fflush vprintf vfprintf snprintf sprintf vsnprintf vsprintf
stdout stderr __errno_location __assert_fail __stack_chk_fail abort atexit __cxa_finalize __cxa_atexit __gmon_start__
_ITM_deregisterTMCloneTable _ITM_registerTMCloneTable __tls_get_addr __dso_handle __gxx_personality_v0
__dynamic_cast __libc_single_threaded __isnan __isnanf __isinf __isinff __finite __finitef __fpclassify
__fpclassifyf __signbit __signbitf pthread_mutex_lock pthread_mutex_unlock pthread_mutex_trylock pthread_once
pthread_key_create pthread_key_delete pthread_getspecific pthread_setspecific pthread_self pthread_equal
sched_yield""".split())
_C_PREFIXES = ("__cxa_", "_Unwind_", "GOMP_", "__kmpc_", "omp_", "_ZGV", "__cuda", "cuda", "__nv_", "_Py", "Py",
               "Sleef_")  # SLEEF: vector math (linked for a source that includes <sleef.h>)
_FORTIFIED = re.compile(r"__(\w+)_chk$")
_MATH_NAME = re.compile(r"(?:__)?(" + "|".join(_MATH) + r")[fl]?(?:_finite)?$")
# denied outright, by the check each belongs to (anything else unknown is c_undefined_symbols)
_CATEGORIES = {
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
                 r"clearenv|secure_getenv",
    "c_inline_asm_and_load_hooks": r"clock_gettime|gettimeofday|time|clock|__rdtsc|times|getrusage",
    "c_rng": r"s?rand(om)?|rand_r|[dlmejn]rand48|getrandom|getentropy|arc4random\w*",
}
_DENIED = {check: re.compile(f"(?:{pattern})$") for check, pattern in _CATEGORIES.items()}
# C++: the namespaces allowed, minus identifiers that reach files, threads, processes or Python
_CXX_NAMESPACES = {"std", "__cxxabiv1", "__gnu_cxx", "at", "c10", "torch", "pybind11", "caffe2"}
_STD_ABBREVIATIONS = ("St", "Sa", "Sb", "Ss", "Si", "So", "Sd")
_CXX_DENIED = {
    "c_files_and_network": {"basic_ofstream", "basic_ifstream", "basic_fstream", "basic_filebuf", "__basic_file",
                            "filesystem", "from_file", "MapAllocator", "RefcountedMapAllocator", "serialize",
                            "PyTorchStreamReader", "PyTorchStreamWriter", "FileAdapter", "jit"},
    "c_threads": {"thread", "jthread", "set_num_threads", "set_num_interop_threads"},
    "c_processes_and_signals": {"import", "eval", "exec", "eval_file"},
    "c_rng": {"random_device", "manual_seed"},
}
_TORCH_IO = re.compile(r"_ZN5torch(4save|4load)")  # torch::save / torch::load (an identifier "load" alone is pybind's)
_PY_DENIED = re.compile(r"(PyRun_|PyImport_|Py_CompileString|PyEval_Eval|PyFile_|PyOS_|PyMarshal_|PySys_|Py_Exit|"
                        r"Py_Main|Py_RunMain|PyCode_|PyFunction_New|PyObject_AsFileDescriptor)")


def undefined_symbols(path: str | Path) -> list[str]:
    """Names of the undefined symbols of an ELF64 little-endian object (.so: dynamic, .o: all)."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{Path(path).name}: not a 64-bit little-endian ELF object")
    (e_type,) = struct.unpack_from("<H", data, 16)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    wanted = SHT_DYNSYM if e_type == 3 else SHT_SYMTAB
    names = []
    for _name, sh_type, _f, _a, offset, size, link, _i, _al, entsize in sections:
        if sh_type != wanted or not entsize:
            continue
        str_off = sections[link][4]
        for k in range(1, size // entsize):
            st_name, _info, _other, st_shndx = struct.unpack_from("<IBBH", data, offset + k * entsize)
            if st_shndx == SHN_UNDEF and st_name:
                end = data.index(b"\0", str_off + st_name)
                names.append(data[str_off + st_name:end].decode(errors="replace"))
    return names


def mangled_identifiers(symbol: str) -> list[str]:
    """The length-prefixed identifiers of an Itanium-mangled name (``_ZN5torch4saveE..`` -> torch, save)."""
    found, i = [], 2
    while i < len(symbol):
        m = re.match(r"\d+", symbol[i:])
        if m is None:
            i += 1
            continue
        size, i = int(m.group(0)), i + len(m.group(0))
        found.append(symbol[i:i + size])
        i += size
    return found


def cxx_namespace(symbol: str) -> str:
    """The outermost namespace of a mangled C++ name ("std" for the standard library's abbreviations)."""
    rest = symbol[2:]
    if rest[:2] in ("TV", "TI", "TS", "TT"):  # vtable, typeinfo, typeinfo name, VTT of a class
        rest = rest[2:]
    if rest[:2] in ("nw", "na", "dl", "da"):  # operator new / delete
        return "std"
    if rest.startswith("N"):
        rest = rest[1:].lstrip("rVKRO")
    if rest[:2] in _STD_ABBREVIATIONS:
        return "std"
    match = re.match(r"\d+", rest)
    return rest[len(match.group(0)):len(match.group(0)) + int(match.group(0))] if match else ""


# typeinfo (and its name) of a builtin type or a pointer to one, which the C++ runtime defines:
# ``throw "message"`` in torch's headers needs _ZTIPKc (const char*), a thrown bool _ZTIb
_BUILTIN_TYPEINFO = re.compile(r"_ZT[IS][PKRVO]*(?:[a-z]|D[a-z]|DF\d+_)$")


def classify(symbol: str) -> str:
    """"" if allowed, else the name of the check that refuses it."""
    if symbol.startswith("_ZGV") or symbol == "_GLOBAL_OFFSET_TABLE_" or _BUILTIN_TYPEINFO.match(symbol):
        return ""  # libmvec's vector math; the linker's GOT; the runtime's typeinfo of builtin types
    if symbol.startswith("_Z"):
        if cxx_namespace(symbol) not in _CXX_NAMESPACES:
            return "c_undefined_symbols"
        if _TORCH_IO.match(symbol):
            return "c_files_and_network"
        idents = set(mangled_identifiers(symbol))
        return next((check for check, words in _CXX_DENIED.items() if idents & words), "")
    if symbol.startswith(("Py", "_Py")) and _PY_DENIED.match(symbol.lstrip("_")):
        return "c_processes_and_signals"
    fortified = _FORTIFIED.match(symbol)
    base = fortified.group(1) if fortified else symbol
    if base in _C_ALLOWED or _MATH_NAME.match(base):
        return ""
    for check, pattern in _DENIED.items():
        if pattern.match(base.lstrip("_")):
            return check
    if symbol.startswith(_C_PREFIXES) and not symbol.startswith(("cudaIpc", "cuIpc")):
        return ""
    return "c_undefined_symbols"


def symbol_findings(path: str | Path, label: str, disabled: tuple[str, ...] = (), strict: bool = True) -> list[Finding]:
    """One finding per refused symbol of the object at ``path`` (``label`` names the source).
    ``strict=False`` (vendor runtimes whose names are not listed) refuses only the known-dangerous ones."""
    try:
        symbols = undefined_symbols(path)
    except (OSError, ValueError, struct.error, IndexError) as exc:
        return [Finding("c_undefined_symbols", f"{label}: cannot read the built object's symbols ({exc})")]
    findings = []
    for symbol in sorted(set(symbols)):
        check = classify(symbol)
        if check == "c_undefined_symbols" and not strict:
            continue
        if check and check not in disabled:
            findings.append(Finding(check, f"{label}: the built code calls {symbol}, which is not allowed "
                                           "(files, processes, sockets, dynamic loading, system calls, threads)"))
    return findings
