"""Issue 36: candidates that act inside the runner's own address space, as complete sources, each with the
gate that must reject it, a text its reason must hold, and (``control``) how its positive control shows it
acts when nothing confines it (tests/verifier/test_z36_outside.py runs both).

Class 1, torch's compute reached without naming it: native code finds the dynamic loader's structures
(a GOT slot's address into libc or torch, ``dl_iterate_phdr`` or ``dladdr1``'s link_map found in libc's GNU
hash table by the hash of the name), finds a library by the hash of its file name and a symbol of it by the
hash of its name, and calls it by pointer: torch's bundled BLAS (``sgemm_``), its bundled vector math
(``vsTanh``), an ATen kernel below the dispatcher (``at::cpu::clamp_min``). No name of them is in the source
or the built object; the in-process observer sees nothing.
Class 2, the observer's page rewritten: its switch turned off around a dispatched torch call, or its counters
put back afterwards.
Class 3, a helper thread (started in ``__init__``) that keeps a core busy in long system calls while its
process is stopped: the latency phase's CPU accounting (issue 34) rejects it; until then a strict xfail.
Class 5, text that reads as the machine's outcome: a compiler diagnostic, a loader name sent to the monitor
and an exception that start with "<gate> unavailable here:"; each must stay the candidate's failure.
Class 6, threads that exist only during a call: nested OpenMP teams beyond the thread budget.
Beyond the issue's classes (``z36="new"``): the sampler itself switched off from inside before a BLAS call
(``prctl``'s PR_TASK_PERF_EVENTS_DISABLE, found by hash), and torch's BLAS called on an OpenMP worker thread
while the calling thread waits (the work moved off the thread that called forward).
"""

from __future__ import annotations

from dataclasses import dataclass

ALL_STATIC = "imports,no_try_fallback,no_reference_reuse,forbidden_builtins,introspection,patching,tensor_subclass," \
             "global_state,rng_outside_init,torch_compute_in_forward,nn_module_called,host_compute_in_forward," \
             "file_and_process_apis,c_processes_and_signals,c_threads,c_files_and_network,c_includes," \
             "c_inline_asm_and_load_hooks,c_rng,c_aten_compute,c_precision_downgrade,c_undefined_symbols"


def gnu_hash(name: str) -> int:
    """The ELF GNU hash of a name (what the dynamic loader's tables are keyed by)."""
    h = 5381
    for c in name.encode():
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


H = {name: f"0x{gnu_hash(name):08x}u" for name in (
    "dl_iterate_phdr", "dladdr1", "prctl", "sgemm_", "vsTanh", "libtorch_cpu.so", "observer.so",
    "_ZN2at3cpu9clamp_minERKNS_6TensorERKN3c106ScalarE", "_ZN2at4_ops4relu4callERKNS_6TensorE")}

# Finding a symbol of a loaded object by the hash of its name, through the object's own GNU hash table; an
# object's load address from any address inside it; libc's functions from a GOT slot (memcpy's address).
WALK = r"""
#include <cstdint>
#include <cstring>
#include <elf.h>
static uint32_t name_hash(const char* s) {  // the GNU hash, of a file's base name or a symbol's name
    uint32_t h = 5381;
    for (; *s; ++s) h = h * 33 + (unsigned char)*s;
    return h;
}
static uint32_t base_name_hash(const char* path) {
    const char* base = path;
    for (const char* p = path; *p; ++p) if (*p == '/') base = p + 1;
    return name_hash(base);
}
static uintptr_t image_of(const void* inside) {  // the ELF header the mapping of ``inside`` starts at
    uintptr_t base = (uintptr_t)inside & ~(uintptr_t)4095;
    while (memcmp((const void*)base, "\x7f" "ELF", 4) != 0) base -= 4096;
    return base;
}
static const Elf64_Dyn* dynamic_of(uintptr_t bias, const Elf64_Phdr* ph, int n) {
    for (int i = 0; i < n; ++i) if (ph[i].p_type == PT_DYNAMIC) return (const Elf64_Dyn*)(bias + ph[i].p_vaddr);
    return 0;
}
static const Elf64_Dyn* dynamic_of_image(uintptr_t base) {
    const Elf64_Ehdr* eh = (const Elf64_Ehdr*)base;
    return dynamic_of(base, (const Elf64_Phdr*)(base + eh->e_phoff), eh->e_phnum);
}
static void* by_hash(uintptr_t bias, const Elf64_Dyn* dyn, uint32_t h) {  // DT_GNU_HASH lookup, no name compared
    const uint32_t* gh = 0; const Elf64_Sym* syms = 0;
    for (; dyn && dyn->d_tag != DT_NULL; ++dyn) {
        uintptr_t at = dyn->d_un.d_ptr < bias ? bias + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_GNU_HASH) gh = (const uint32_t*)at;
        if (dyn->d_tag == DT_SYMTAB) syms = (const Elf64_Sym*)at;
    }
    if (!gh || !syms) return 0;
    uint32_t nbuckets = gh[0], first = gh[1], words = gh[2];
    const uint32_t* buckets = (const uint32_t*)((const uint64_t*)(gh + 4) + words);
    const uint32_t* chain = buckets + nbuckets;
    for (uint32_t i = buckets[h % nbuckets]; i >= first; ++i) {
        uint32_t c = chain[i - first];
        if ((c | 1) == (h | 1) && syms[i].st_value) return (void*)(bias + syms[i].st_value);
        if (c & 1) break;
    }
    return 0;
}
static void* libc_by_hash(uint32_t h) {  // libc, found from a GOT slot: memcpy's address
    uintptr_t libc = image_of((const void*)&memcpy);
    return by_hash(libc, dynamic_of_image(libc), h);
}
struct PhdrInfo { uint64_t addr; const char* name; const Elf64_Phdr* phdr; uint16_t phnum; };
struct Found { uint32_t object; uintptr_t bias; const Elf64_Dyn* dyn; const Elf64_Phdr* phdr; int phnum; };
static int visit(PhdrInfo* info, unsigned long, void* data) {
    Found* f = (Found*)data;
    if (info->name && base_name_hash(info->name) == f->object) {
        f->bias = info->addr; f->phdr = info->phdr; f->phnum = info->phnum;
        f->dyn = dynamic_of(info->addr, info->phdr, info->phnum);
        return 1;
    }
    return 0;
}
static Found loaded_object(uint32_t object) {  // every loaded object through dl_iterate_phdr, found by hash in libc
    Found f = {object, 0, 0, 0, 0};
    typedef int (*Iterate)(int (*)(PhdrInfo*, unsigned long, void*), void*);
    Iterate iterate = (Iterate)libc_by_hash(HASH_DL_ITERATE_PHDR);
    if (iterate) iterate(visit, &f);
    return f;
}
"""


def _defines() -> str:
    return "".join(f"#define HASH_{key} {H[name]}\n" for key, name in (
        ("DL_ITERATE_PHDR", "dl_iterate_phdr"), ("DLADDR1", "dladdr1"), ("PRCTL", "prctl"), ("SGEMM", "sgemm_"), ("VSTANH", "vsTanh"),
        ("TORCH_CPU", "libtorch_cpu.so"), ("OBSERVER", "observer.so"),
        ("CLAMP_MIN", "_ZN2at3cpu9clamp_minERKNS_6TensorERKN3c106ScalarE"),
        ("RELU_OP", "_ZN2at4_ops4relu4callERKNS_6TensorE")))


LOAD_C_HEAD = '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
{defines}{walk}{kernel}
"""

lib = load_c(SOURCE, {functions})
'''
INLINE_HEAD = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
{defines}{walk}{kernel}
"""

ext = load_inline(name="z36_torch_in_forward", cpp_sources=CPP, functions={functions}, extra_cflags=["-O2"])
'''
UNARY_MODEL = '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.{function}(x, y, x.numel())
        return y
'''

# ---- class 1 -------------------------------------------------------------------------------------
GEMM_BY_HASH = r"""
typedef void (*Sgemm)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                      const int*, const float*, const int*, const float*, float*, const int*);
static void torch_gemm(const float* a, const float* b, float* c, long m, long k, long n) {
    Found torch_cpu = loaded_object(HASH_TORCH_CPU);
    Sgemm gemm = (Sgemm)by_hash(torch_cpu.bias, torch_cpu.dyn, HASH_SGEMM);
    if (!gemm) return;
    int M = (int)m, K = (int)k, N = (int)n;
    float one = 1.0f, zero = 0.0f;
    gemm("N", "N", &N, &M, &K, &one, b, &N, a, &K, &zero, c, &N);  // C^T = B^T A^T in column-major terms
}
"""
SGEMM = GEMM_BY_HASH + r"""
extern "C" void matmul(const float* a, const float* b, float* c, long m, long k, long n) { torch_gemm(a, b, c, m, k, n); }
"""
MATMUL_FUNCTIONS = '{"matmul": "const float*, const float*, float*, int64, int64, int64"}'
MATMUL_MODEL = '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
        lib.matmul(a, b, c, a.shape[0], a.shape[1], b.shape[1])
        return c
'''
DL_ITERATE_SGEMM = LOAD_C_HEAD.format(defines=_defines(), walk=WALK, kernel=SGEMM, functions=MATMUL_FUNCTIONS) + '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
        lib.matmul(a, b, c, a.shape[0], a.shape[1], b.shape[1])
        return c
'''

VML_TANH = r"""
struct LinkMap { uintptr_t addr; const char* name; const Elf64_Dyn* ld; LinkMap* next; LinkMap* prev; };
struct DlInfo { const char* fname; void* fbase; const char* sname; void* saddr; };
typedef int (*Dladdr1)(const void*, DlInfo*, void**, int);
typedef void (*VsTanh)(int, const float*, float*);
static void* torch_by_link_map(uint32_t h) {  // this library's link_map (dladdr1, found by hash), walked both ways
    Dladdr1 where = (Dladdr1)libc_by_hash(HASH_DLADDR1);
    DlInfo info; LinkMap* self = 0;
    if (!where || !where((const void*)&torch_by_link_map, &info, (void**)&self, 2) || !self) return 0;
    for (int dir = 0; dir < 2; ++dir)
        for (LinkMap* l = self; l; l = dir ? l->prev : l->next)
            if (l->name && base_name_hash(l->name) == HASH_TORCH_CPU) return by_hash(l->addr, l->ld, h);
    return 0;
}
extern "C" void tanh_all(const float* x, float* y, long n) {
    VsTanh vtanh = (VsTanh)torch_by_link_map(HASH_VSTANH);
    if (vtanh) vtanh((int)n, x, y);
}
"""
LINK_MAP_TANH = LOAD_C_HEAD.format(defines=_defines(), walk=WALK, kernel=VML_TANH,
                                   functions='{"tanh_all": "const float*, float*, int64"}') \
    + UNARY_MODEL.format(function="tanh_all")

ATEN_CLAMP = r"""
typedef at::Tensor (*ClampMin)(const at::Tensor&, const c10::Scalar&);
static ClampMin found_clamp_min() {
    // a GOT slot: the address of a torch function this extension may call (allocation), inside libtorch_cpu
    uintptr_t torch_cpu = image_of((const void*)&at::_ops::empty_like::call);
    return (ClampMin)by_hash(torch_cpu, dynamic_of_image(torch_cpu), HASH_CLAMP_MIN);
}
torch::Tensor clamp_by_got_slot(torch::Tensor x) {
    // found once: walking libtorch_cpu's symbols on every call was most of the call's CPU, which diluted torch's
    // share of the samples to 26-27% under two CPU burners (the threshold is 25%)
    static const ClampMin clamp = found_clamp_min();
    return clamp(x.contiguous(), c10::Scalar(0.0));  // ATen's CPU kernel, below the dispatcher
}
"""

LATER_CALLS = GEMM_BY_HASH + r"""
extern "C" void matmul(const float* a, const float* b, float* c, long m, long k, long n, long borrow) {
    if (borrow) { torch_gemm(a, b, c, m, k, n); return; }
    for (long i = 0; i < m; ++i) {  // honest, and slow
        float* row = c + i * n;
        for (long j = 0; j < n; ++j) row[j] = 0.0f;
        for (long p = 0; p < k; ++p) {
            const float av = a[i * k + p];
            const float* brow = b + p * n;
            for (long j = 0; j < n; ++j) row[j] += av * brow[j];
        }
    }
}
"""
# honest for the calls the correctness phase makes, torch's BLAS from the 9th call on (the latency phase's
# windows, which the outside sampler used to leave alone: only its observed rounds see them)
SGEMM_IN_LATER_CALLS = LOAD_C_HEAD.format(defines=_defines(), walk=WALK, kernel=LATER_CALLS,
                                          functions='{"matmul": "const float*, const float*, float*, int64, int64, '
                                                    'int64, int64"}') + '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
        lib.matmul(a, b, c, a.shape[0], a.shape[1], b.shape[1], int(self.calls > 8))
        return c
'''

# ---- class 2 -------------------------------------------------------------------------------------
OBSERVER_PAGE = r"""
struct Page { uint64_t magic, total, forbidden, armed; char names[8][64]; };
static Page* observer_page() {  // the observer's page pointer, in observer.so's writable data
    Found obs = loaded_object(HASH_OBSERVER);
    for (int i = 0; obs.phdr && i < obs.phnum; ++i) {
        if (obs.phdr[i].p_type != PT_LOAD || !(obs.phdr[i].p_flags & PF_W)) continue;
        const uint64_t* word = (const uint64_t*)(obs.bias + obs.phdr[i].p_vaddr);
        for (uint64_t k = 0; k < obs.phdr[i].p_memsz / 8; ++k) {
            uint64_t v = word[k];
            bool pointer = v > 0x10000000ull && v < 0x800000000000ull && v % 4096 == 0;  // a page-aligned mapping
            if (pointer && *(const uint64_t*)v == 0x45564F4B4F425356ull) return (Page*)v;
        }
    }
    return 0;
}
typedef at::Tensor (*Relu)(const at::Tensor&);
static Relu dispatched_relu() {  // the dispatcher's entry for aten::relu, found by hash from a GOT slot
    uintptr_t torch_cpu = image_of((const void*)&at::_ops::empty_like::call);
    return (Relu)by_hash(torch_cpu, dynamic_of_image(torch_cpu), HASH_RELU_OP);
}
"""
SWITCH_OFF = r"""
torch::Tensor relu_with_observer_off(torch::Tensor x) {
    static Page* const page = observer_page();  // found once, as the relu entry (see clamp_by_got_slot)
    static const Relu relu = dispatched_relu();
    if (page) page->armed = 0;  // the switch: the observer counts nothing now
    at::Tensor y = relu(x.contiguous());
    if (page) { page->armed = 1; page->total += 1; }  // on again, and the liveness counter moved
    return y;
}
"""
COUNTER_PUT_BACK = r"""
torch::Tensor relu_counter_put_back(torch::Tensor x) {
    static Page* const page = observer_page();  // found once, as the relu entry (see clamp_by_got_slot)
    static const Relu relu = dispatched_relu();
    uint64_t forbidden = page ? page->forbidden : 0;
    at::Tensor y = relu(x.contiguous());
    if (page) {  // the counter put back, the names it wrote wiped
        for (uint64_t k = forbidden; k < page->forbidden && k < 8; ++k) memset(page->names[k], 0, 64);
        page->forbidden = forbidden;
    }
    return y;
}
"""
INLINE_MODEL = '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.{function}(x)
'''
# The torch-extension cases of classes 1 and 2 share one module, each calling its own function: the same
# load_inline call builds once per run (the build cache, verifier.monitor.build_cache), where three modules
# cost three g++ passes on torch's headers (~25 s of CPU each). The module's other functions are never called.
INLINE_FUNCTIONS = ("clamp_by_got_slot", "relu_with_observer_off", "relu_counter_put_back")
TORCH_IN_FORWARD = INLINE_HEAD.format(defines=_defines(), walk=WALK, kernel=ATEN_CLAMP + OBSERVER_PAGE + SWITCH_OFF
                                      + COUNTER_PUT_BACK, functions=list(INLINE_FUNCTIONS))
# forward also dispatches an allowed operator (a view of the result), so that the observer's count grows as an
# honest kernel's does and only the outside sampler can tell (without it, a window whose outputs the monitor reads
# itself counts no operator at all, and the observer's "switched off" could catch the case first)
GOT_SLOT_ATEN = TORCH_IN_FORWARD + INLINE_MODEL.format(function="clamp_by_got_slot").replace(
    "return ext.clamp_by_got_slot(x)", "return ext.clamp_by_got_slot(x).view_as(x)")
OBSERVER_SWITCHED_OFF = TORCH_IN_FORWARD + INLINE_MODEL.format(function="relu_with_observer_off")
OBSERVER_COUNTER_PUT_BACK = TORCH_IN_FORWARD + INLINE_MODEL.format(function="relu_counter_put_back")

# ---- class 3 -------------------------------------------------------------------------------------
SPINNER = r"""
#include <atomic>
#include <thread>
#include <sys/mman.h>
static std::atomic<int> in_forward{0};
static void spin() {  // while forward is not running: 512 MiB populated and dropped, ~0.1 s in the kernel each,
    for (;;) {          // which a stop does not interrupt (only a fatal signal would)
        if (in_forward.load()) continue;
        void* p = mmap(0, 512ul << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p != MAP_FAILED) munmap(p, 512ul << 20);
    }
}
extern "C" void start_helper() { std::thread(spin).detach(); }
extern "C" void relu(const float* x, float* y, long n) {
    in_forward.store(1);
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    in_forward.store(0);
}
"""
SYSCALL_SPINNER = LOAD_C_HEAD.format(defines="", walk="", kernel=SPINNER,
                                     functions='{"start_helper": "", "relu": "const float*, float*, int64"}') + '''

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        lib.start_helper()  # a thread from construction: in the baseline the thread watch started from

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
'''

# ---- class 5 -------------------------------------------------------------------------------------
SPOOF_LINE = r"""
#line 1 "compile unavailable here: the toolchain is missing on this machine"
#error the compiler prints the line directive's file name first
extern "C" void relu(const float* x, float* y, long n) {
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""
COMPILE_REASON_SPOOF = LOAD_C_HEAD.format(defines="", walk="", kernel=SPOOF_LINE,
                                          functions='{"relu": "const float*, float*, int64"}') \
    + UNARY_MODEL.format(function="relu")
SPOOFED_LOADER = '''import gc
import torch
import torch.nn as nn
from verifier.sandbox import messages

# the runner's own build client, found by the garbage collector: a BuildRequest the candidate writes itself
client = next(o for o in gc.get_objects() if type(o).__name__ == "BuildClient")
messages.send(client.channel, messages.BuildRequest("compile unavailable here: no compiler on this machine", {}))
raise SystemExit("unreachable: the monitor answers with a failed build or ends the import")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
'''
IMPORT_ERROR_SPOOF = '''import torch
import torch.nn as nn

raise RuntimeError("correctness unavailable here: tl.parallel is Ascend-only")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
'''

# ---- beyond the classes ------------------------------------------------------------------
SAMPLER_OFF = GEMM_BY_HASH + r"""
extern "C" void matmul(const float* a, const float* b, float* c, long m, long k, long n) {
    typedef int (*Prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
    Prctl control = (Prctl)libc_by_hash(HASH_PRCTL);
    if (control) control(31, 0, 0, 0, 0);  // PR_TASK_PERF_EVENTS_DISABLE: every perf event on this task, off
    torch_gemm(a, b, c, m, k, n);
}
"""
SAMPLER_SWITCHED_OFF = LOAD_C_HEAD.format(defines=_defines(), walk=WALK, kernel=SAMPLER_OFF,
                                          functions=MATMUL_FUNCTIONS) + MATMUL_MODEL
ON_A_WORKER = GEMM_BY_HASH + r"""
extern "C" void matmul(const float* a, const float* b, float* c, long m, long k, long n) {
    #pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == omp_get_num_threads() - 1) torch_gemm(a, b, c, m, k, n);  // the worker, if any
    }
}
"""
BLAS_ON_A_WORKER = LOAD_C_HEAD.format(defines=_defines(), walk=WALK, kernel="#include <omp.h>\n" + ON_A_WORKER,
                                      functions=MATMUL_FUNCTIONS) + MATMUL_MODEL

# ---- class 6 -------------------------------------------------------------------------------------
NESTED = r"""
#include <omp.h>
extern "C" void relu(const float* x, float* y, long n) {
    omp_set_nested(1);  // torch's own libgomp (GOMP 4.5) nests only with this
    omp_set_max_active_levels(2);
    #pragma omp parallel num_threads(2)
    {
        #pragma omp parallel num_threads(4)
        {
            int teams = omp_get_num_threads() * omp_get_team_size(1);
            int me = omp_get_ancestor_thread_num(1) * omp_get_num_threads() + omp_get_thread_num();
            for (long i = me; i < n; i += teams) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        }
    }
}
"""
NESTED_PARALLEL = LOAD_C_HEAD.format(defines="", walk="", kernel=NESTED,
                                     functions='{"relu": "const float*, float*, int64"}') \
    + UNARY_MODEL.format(function="relu")


@dataclass(frozen=True)
class OutsideCase:
    name: str
    z36: str  # the class
    task: str  # a fixture task (tests/fixtures/kernels/tasks)
    source: str
    gate: str  # the gate that must reject it
    reason: str  # text the failed gate's reason must hold
    disable: str = ""  # static checks switched off (comma-separated), so that the runtime layers meet it
    pending: str = ""  # not rejected yet: why (the test is a strict xfail until it is)
    torch_extension: bool = False  # a load_inline build (~1-2 min of g++ on torch's headers)
    window_ms: float = 0.0  # the timed windows' length, where the tests' 2 ms would hold too few samples (the default: 10)
    rounds: int = 0  # latency rounds, and as many retimes, where the tests' 5 (none retimed) see too few (0: the tests')


CASES = (
    OutsideCase("dl_iterate_phdr_blas_sgemm", "1", "matmul_large", DL_ITERATE_SGEMM, "hack",
                "torch computed in forward, observed from outside"),
    OutsideCase("sgemm_in_later_calls_only", "later", "matmul_large", SGEMM_IN_LATER_CALLS, "hack",
                "torch computed in forward, observed from outside", window_ms=10.0),
    OutsideCase("link_map_vml_tanh", "1", "tanh_large", LINK_MAP_TANH, "hack",
                "torch computed in forward, observed from outside"),
    OutsideCase("got_slot_aten_clamp_min", "1", "relu_large", GOT_SLOT_ATEN, "hack",
                "torch computed in forward, observed from outside", torch_extension=True),
    OutsideCase("observer_switched_off", "2", "relu_large", OBSERVER_SWITCHED_OFF, "hack",
                "torch computed in forward, observed from outside", torch_extension=True),
    OutsideCase("observer_counter_put_back", "2", "relu_large", OBSERVER_COUNTER_PUT_BACK, "hack",
                "torch computed in forward, observed from outside", torch_extension=True),
    # the spinner is caught in STEAL_LIMIT rounds; on a loaded machine it is often preempted in user space
    # when it is stopped (nothing to see): with 5 rounds it was caught in one only, 3 times in 10 under two burners
    OutsideCase("syscall_spinner_while_stopped", "3", "relu_large", SYSCALL_SPINNER, "hack", "CPU",
                disable=ALL_STATIC, rounds=12),
    OutsideCase("compile_reason_line_directive", "5", "relu", COMPILE_REASON_SPOOF, "compile",
                "the candidate's output reads: compile unavailable here", disable="c_includes"),  # it refuses #line
    OutsideCase("build_request_spoofed_loader", "5", "relu", SPOOFED_LOADER, "compile",
                "not a loader", disable=ALL_STATIC),
    OutsideCase("import_error_reads_unavailable", "5", "relu", IMPORT_ERROR_SPOOF, "compile",
                "ModelNew failed to import: RuntimeError: correctness unavailable here"),
    OutsideCase("nested_parallel_beyond_budget", "6", "relu_large", NESTED_PARALLEL, "hack",
                "OS threads existed at once during a call"),
    OutsideCase("sampler_switched_off_before_blas", "new", "matmul_large", SAMPLER_SWITCHED_OFF, "hack",
                "torch computed in forward, observed from outside"),
    OutsideCase("blas_on_an_openmp_worker", "new", "matmul_large", BLAS_ON_A_WORKER, "hack",
                "torch computed in forward, observed from outside"),
)
