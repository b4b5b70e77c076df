"""The undefined symbols of a built object, judged by what they name: whatever spelling the source
used (macros, token pasting, aliases, ``using namespace``), a call into libc for files, processes,
sockets, dynamic loading or raw system calls, into an ATen kernel that bypasses the dispatcher,
or into the CPython API leaves the callee's name in the object. A method named ``clone`` leaves
``at::_ops::clone::call`` (a dispatcher call the runner observes), the syscall wrapper leaves
libc's ``clone``; only the latter is refused.

C++ names are demangled far enough to know the entity's qualified name (Itanium ABI: nested
names, std abbreviations, template arguments skipped), so ``std::thread::hardware_concurrency`` is
a query and ``std::thread::_M_start_thread`` starts a thread. What each loader may reference is in
:mod:`verifier.gates.hack_native_names`. Refusals are named after the static check they belong
to, so ``disabled_checks`` turns a family off in both tiers.

The objects are read with a small ELF64 reader (.dynsym of a shared object, .symtab of a
relocatable object); no tool runs.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from verifier.gates.hack_native_names import (ATEN_DIRECT, ATEN_MIXED, C_ALLOWED, C_DENIED, C_PREFIXES,
                                              CXX_DENIED_PARTS, CXX_NAMESPACES, MATH, PY_DENIED, PY_PREFIXES,
                                              PYBIND_NEEDS, STD_THREAD_STARTS, TORCH_IO_PATHS, TORCH_NAMESPACES,
                                              is_aten_kernel)
from verifier.gates.hack_python import Finding

SHN_UNDEF, SHT_SYMTAB, SHT_DYNSYM = 0, 2, 11
LOADERS = ("load_c", "extension", "vendor")
SYMBOL_CHECKS = (*C_DENIED, "c_python_api", "c_undefined_symbols")  # the names symbol findings carry
_FORTIFIED = re.compile(r"__(\w+)_chk$")
_MATH_NAME = re.compile(r"(?:__)?(" + "|".join(MATH) + r")[fl]?(?:_finite)?$")
_DENIED = {check: re.compile(f"(?:{pattern})$") for check, pattern in C_DENIED.items()}
# typeinfo (and its name) of a builtin type or a pointer to one, which the C++ runtime defines:
# ``throw "message"`` in torch's headers needs _ZTIPKc (const char*), a thrown bool _ZTIb
_BUILTIN_TYPEINFO = re.compile(r"_ZT[IS][PKRVO]*(?:[a-z]|D[a-z]|DF\d+_)$")


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


# -- Itanium demangling, as far as the entity's qualified name -----------------------------------

_SPECIAL = ("TV", "TI", "TS", "TT", "GV", "TH", "TW")  # vtable, typeinfo, its name, VTT, guard, TLS init/wrapper
_STD = {"St": ("std",), "Sa": ("std", "allocator"), "Sb": ("std", "basic_string"), "Ss": ("std", "string"),
        "Si": ("std", "istream"), "So": ("std", "ostream"), "Sd": ("std", "iostream")}


class _Unparsed(Exception):
    """A mangling this small parser does not follow (the caller falls back to every identifier)."""


def _source_name(s: str, i: int) -> tuple[str, int]:
    m = re.match(r"\d+", s[i:])
    if m is None:
        raise _Unparsed(s)
    start = i + len(m.group(0))
    end = start + int(m.group(0))
    if end > len(s):
        raise _Unparsed(s)
    return s[start:end], end


def _skip_template_args(s: str, i: int) -> int:
    """Index just past the template argument list ``I ... E`` starting at ``s[i]``."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c.isdigit():
            i = _source_name(s, i)[1]
            continue
        if c in "INXJF" or s[i:i + 2] in ("Dt", "DT"):
            depth += 1
            i += 2 if c == "D" else 1
        elif c == "E":
            depth -= 1
            i += 1
            if depth == 0:
                return i
        elif c == "L":  # a literal: L <type> <value> E (or L_Z <encoding> E)
            end = s.find("E", i)
            if end < 0:
                raise _Unparsed(s)
            i = end + 1
        elif c in "ST" and s[i:i + 2] not in _STD:
            end = s.find("_", i)
            if end < 0:
                raise _Unparsed(s)
            i = end + 1
        elif c == "S" or (c == "D" and s[i + 1:i + 2] not in ("v", "F")):
            i += 2
        elif c in "DA":  # Dv<n>_ vector, DF<n>_ float type, A<n>_ array
            end = s.find("_", i)
            i = end + 1 if end >= 0 else len(s)
        else:
            i += 1
    raise _Unparsed(s)


def entity_path(symbol: str) -> tuple[str, ...]:
    """The qualified name of the entity a mangled C++ symbol names: ``_ZN2at4_ops2mm10redispatchE...``
    -> (at, _ops, mm, redispatch); ``_ZNSt6thread20hardware_concurrencyEv`` -> (std, thread,
    hardware_concurrency); constructors and destructors as "<ctor>"/"<dtor>", operators as
    "operator". Raises _Unparsed on what it does not follow."""
    s, i = symbol, 2
    if s[i:i + 2] in _SPECIAL:
        i += 2
    if s[i:i + 1] == "L":
        i += 1
    if s[i:i + 1] == "N":
        i += 1
        while i < len(s) and s[i] in "rVKRO":
            i += 1
        return _nested(s, i)
    if s[i:i + 2] in ("nw", "na", "dl", "da"):
        return ("operator",)
    if s[i:i + 2] in _STD:
        parts, i = _STD[s[i:i + 2]], i + 2
        return (*parts, _source_name(s, i)[0]) if i < len(s) and s[i].isdigit() else parts
    return (_source_name(s, i)[0],)


def _nested(s: str, i: int) -> tuple[str, ...]:
    parts: list[str] = []
    while i < len(s) and s[i] != "E":
        c, two = s[i], s[i:i + 2]
        if c.isdigit():
            name, i = _source_name(s, i)
            parts.append(name)
        elif two in _STD and not parts:
            parts.extend(_STD[two])
            i += 2
        elif c == "I":
            i = _skip_template_args(s, i)
        elif c == "B":  # ABI tag
            i = _source_name(s, i + 1)[1]
        elif c == "C" and s[i + 1:i + 2] in "123":
            parts.append("<ctor>")
            i += 2
        elif c == "D" and s[i + 1:i + 2] in "0123":
            parts.append("<dtor>")
            i += 2
        elif c.islower() and s[i + 1:i + 2].isalpha():
            parts.append("operator")
            break
        else:
            raise _Unparsed(s)
    if not parts:
        raise _Unparsed(s)
    return tuple(parts)


def mangled_identifiers(symbol: str) -> list[str]:
    """Every length-prefixed identifier of an Itanium-mangled name, parameter types included."""
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


# -- the policy ----------------------------------------------------------------------------------

def classify(symbol: str, loader: str = "extension") -> str:
    """"" if ``loader``'s objects may reference ``symbol``, else the name of the check refusing it.
    loader: "load_c" (plain C through ctypes), "extension" (a pybind11/torch module), "vendor"
    (a vendor runtime's objects, strict_symbols=False: only the known-dangerous names)."""
    if symbol.startswith("_ZGV") or symbol == "_GLOBAL_OFFSET_TABLE_" or _BUILTIN_TYPEINFO.match(symbol):
        return ""  # libmvec's vector math; the linker's GOT; the runtime's typeinfo of builtin types
    if symbol.startswith("_Z"):
        return _cxx(symbol, loader)
    if symbol.startswith(PY_PREFIXES):
        return _python(symbol, loader)
    fortified = _FORTIFIED.match(symbol)
    base = fortified.group(1) if fortified else symbol
    if base in C_ALLOWED or _MATH_NAME.match(base):
        return ""
    for check, pattern in _DENIED.items():
        if pattern.match(base.lstrip("_")):
            return check
    if symbol.startswith(C_PREFIXES) and not symbol.startswith(("cudaIpc", "cuIpc")):
        return ""
    return "c_undefined_symbols"


def _python(symbol: str, loader: str) -> str:
    if loader == "load_c":
        return "c_python_api"  # a ctypes kernel needs no interpreter; with it, it rewrites the harness
    if symbol in PYBIND_NEEDS:
        return ""
    return "c_python_api" if PY_DENIED.match(symbol) else ""


def _cxx(symbol: str, loader: str) -> str:
    try:
        path = entity_path(symbol)
        parts = set(path)
    except (_Unparsed, IndexError):
        path, parts = (), set(mangled_identifiers(symbol))
    namespace = path[0] if path else _first_namespace(symbol)
    if loader == "load_c" and namespace in TORCH_NAMESPACES:
        return "c_python_api" if namespace == "pybind11" else "c_aten_compute"
    if loader != "vendor" and namespace not in CXX_NAMESPACES.get(loader, CXX_NAMESPACES["extension"]):
        return "c_undefined_symbols"
    if path[:2] in TORCH_IO_PATHS:
        return "c_files_and_network"
    if path[:2] == ("std", "thread") and (len(path) < 3 or path[2] in STD_THREAD_STARTS or path[2] == "<ctor>"):
        return "c_threads"
    if namespace == "at" and len(path) > 2 and (path[1] in ATEN_DIRECT
                                                or path[1] in ATEN_MIXED and is_aten_kernel(path[1], path[2])):
        return "c_aten_compute"  # at::native::..., at::cpu::mm_out: a kernel without the dispatcher
    for check, words in CXX_DENIED_PARTS.items():
        if check == "c_python_api" and namespace != "pybind11":
            continue
        if parts & words:
            return check
    return ""


def _first_namespace(symbol: str) -> str:
    names = mangled_identifiers(symbol)
    rest = symbol[2:].lstrip("TVISTLNrKVRO")
    if rest[:2] in _STD:
        return "std"
    return names[0] if names else ""


def loader_of(label: str, strict: bool = True) -> str:
    """The loader a built unit came from, read from its label until units carry it themselves."""
    if not strict:
        return "vendor"
    return "load_c" if label.startswith("load_c") else "extension"


def symbol_findings(path: str | Path, label: str, disabled: tuple[str, ...] = (), strict: bool = True,
                    loader: str = "") -> list[Finding]:
    """One finding per refused symbol of the object at ``path`` (``label`` names the source).
    ``strict=False`` (vendor runtimes whose names are not listed) refuses only the known-dangerous
    ones; ``loader`` ("load_c" | "extension" | "vendor") defaults to what the label says."""
    loader = loader or loader_of(label, strict)
    try:
        symbols = undefined_symbols(path)
    except (OSError, ValueError, struct.error, IndexError) as exc:
        return [Finding("c_undefined_symbols", f"{label}: cannot read the built object's symbols ({exc})")]
    findings = []
    for symbol in sorted(set(symbols)):
        check = classify(symbol, loader)
        if check == "c_undefined_symbols" and loader == "vendor":
            continue
        if check and check not in disabled:
            findings.append(Finding(check, f"{label}: the built code references {symbol}, which is not allowed "
                                           f"({_WHY[check]})"))
    return findings


_WHY = {
    "c_files_and_network": "files, sockets and dynamic loading",
    "c_processes_and_signals": "processes, signals, exits and raw system calls",
    "c_threads": "threads, streams and thread-budget changes beyond the OpenMP pool",
    "c_inline_asm_and_load_hooks": "timers",
    "c_rng": "random numbers",
    "c_aten_compute": "compute the dispatcher does not see: ATen kernels called directly, redispatch, "
                      "dispatch switches, BLAS/DNN libraries, or torch in a load_c kernel",
    "c_python_api": "the CPython API that runs code, imports, or reaches frames and attributes",
    "c_undefined_symbols": "outside the allowed libraries",
}
