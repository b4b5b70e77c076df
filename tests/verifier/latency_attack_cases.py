"""Attacks on the latency phase's figure (verifier.monitor.timing, rounds, early_end, freeze, ledger; docs/timing.md),
as complete candidate sources, each with the honest kernel it must not read faster than
(tests/verifier/test_latency_attacks.py verifies both with the production timing plan).

Every case computes every output correctly (the correctness gate and the output checks of every window pass): what
it attacks is the time. The expectation is the same for all: the verdict is refused at the hack gate with a reason
naming what was seen, or its latency is not trusted, or its speedup is at most :data:`GAIN_LIMIT` times the honest
kernel's, verified the same way on the same task. A case the verifier does not yet meet carries ``pending`` (why,
measured): its test is a strict xfail until it is met.

- ``intermittent_syscall_stealer`` (the rounds' stealing accounting and the early end): a thread of the candidate's
  own fires one long system call (768 MiB of pages faulted in by one madvise, which SIGSTOP does not interrupt)
  at the end of about one window in eight, counted from forward's calls, so that it is still running when the
  runner is stopped and the next side's turn starts. Unlike the spinner of test_verifier_timing and z36's class 3,
  which burn in every round, it steals rarely: once in a verification would only disable the early end.
- ``bounded_history_*`` (the early end, the warm-up and the window sizing on a kernel whose cost drifts): a
  near-duplicate "cache" of input signatures (no result is ever taken from it; its pages are faulted in at
  construction, so that its growth never prolongs the warm-up, which lasts while windows fault pages in) that
  every call scans linearly and appends to, bounded at a number of entries: the first calls (the calibration,
  which sizes the windows, the warm-up, the first rounds) are fast, and every call once it is full costs 4-7 times
  the ReLU it computes. Its honest figure is the same kernel with its history full from the first call
  (``PREFILLED``): its steady state, what a user's loop of a few hundred calls reads. Passes the full static
  policy. ``..._full_within_the_first_rounds`` fills in the first four measured rounds, during the rounds the
  early end cannot skip; ``..._filling_through_every_round`` is still filling in the sixteenth.
- ``output_pages_computed_on_fault_in_collect`` (work moved out of the timed window): forward computes only the
  partial pages at the ends of its output, mprotects the rest PROT_NONE and returns; the runner's Collect, which
  copies the outputs into the arena after the clock stopped, faults on them, and a SIGSEGV handler computes the
  pages (moved out with mremap, computed on every thread that faults, moved back in one step) before the copy
  resumes. Unlike a detached thread (hack_c2_std_thread_detached) or a lazy tensor subclass (hack_c3: Collect
  takes only plain tensors), every output is a plain tensor and no thread works after forward returns: the work
  runs inside the runner's own copy. The static checks that refuse mprotect, mremap and sigaction are switched
  off so that the timing itself is what is tested.
- ``output_writer_replaced_to_work_in_collect`` (work moved out of the timed window, from Python): forward computes
  a quarter of a ReLU and replaces the runner's output writer and output describer, which the untimed Collect
  calls, with ones that compute the rest first (an outside case, 2026-11-30: 2.9-3.0x against the honest
  0.93-0.98x). In the timed rounds the monitor reads the outputs itself and the runner only describes them, so
  the moved work makes its Collect far longer than the reference's: refused as work continued after forward.
- ``helpers_precompute_in_the_settle`` (work moved before the clock): two threads of the candidate's own spin on the
  input views forward has seen (the arena's, the same addresses every round) and compute a sum of squares for every
  view whose contents changed. The monitor writes a round's inputs while the runner is stopped and continues it up
  to 5 ms before its clock starts (the settle: its idle threads go back to sleep), so the helpers finish part of
  the window's calls before it begins and forward copies their results (an outside case, 2026-11-30: 1.72-1.92x
  against the honest OpenMP kernel's 1.24-1.42x). The CPU sampler sees the candidate's own code run in the settle,
  and that CPU time is charged to the round's window (verifier.monitor.late_work.early_ns).
"""

from __future__ import annotations

from dataclasses import dataclass, field

GAIN_LIMIT = 1.05  # a case's speedup over its honest kernel's, at most (the lower end of its confidence interval)
# The checks that refuse the system calls these cases make (tests/verifier/test_verifier_timing.SPINNER_CHECKS):
# switched off so that the runtime layers meet them.
SYSCALL_CHECKS = "c_threads,c_processes_and_signals,c_files_and_network,c_undefined_symbols,c_includes"
# The latency phase as a verification runs it (VerifySettings' defaults, which VerifySettings.for_tests shortens)
PRODUCTION_TIMING = dict(latency_rounds=16, retime_rounds=16, warmup_rounds=1, window_ms=40.0, settle_rounds=8,
                         settle_ci=0.025)
# The bounded history's (entries, floats an entry), one entry a call, the full history ~2.1M and ~4.3M floats scanned
# a call: full within the first measured rounds (120-300 calls of relu_large come before them: the correctness
# trials, the calibration, 4-16 warm-up rounds; then 13-25 a window), or still filling in the last one
HISTORY_FULL_EARLY, HISTORY_FILLING_THROUGHOUT = (260, 8192), (1040, 4096)

INTERMITTENT_STEALER = r'''
import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <atomic>
#include <sys/mman.h>
#include <thread>
#include <time.h>

static std::atomic<long> calls{0};

static void nap(long us) {
    struct timespec t = {0, us * 1000};
    nanosleep(&t, nullptr);
}

// one system call that keeps a core busy after SIGSTOP: 768 MiB of fresh pages faulted in at once
static void burst() {
    size_t size = 768ul << 20;
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        madvise(p, size, 23 /* MADV_POPULATE_WRITE */);
        munmap(p, size);
    }
}

// Windows counted from outside forward: calls, then a quiet spell of 3 ms (the window's outputs being
// collected, then the stop). At the end of every eighth window, one burst, so that it is still running
// when the process is stopped and the next side's turn begins.
static void watcher() {
    long seen = 0, windows = 0;
    for (;;) {
        long now = calls.load(std::memory_order_relaxed);
        if (now == seen) { nap(200); continue; }
        for (int quiet = 0; quiet < 6;) {
            nap(500);
            long later = calls.load(std::memory_order_relaxed);
            quiet = later == now ? quiet + 1 : 0;
            now = later;
        }
        seen = now;
        if (++windows % 8 == 0) burst();
    }
}

extern "C" void start(void) { std::thread(watcher).detach(); }

extern "C" void relu(const float* x, float* y, long n) {
    #pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    calls.fetch_add(1, std::memory_order_relaxed);
}
"""

lib = load_c(SOURCE, {"start": "", "relu": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        lib.start()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
'''

_BOUNDED_HISTORY = r'''
import torch
import torch.nn as nn
from verifier.cpu_native import load_c

PREFILLED = False

SOURCE = r"""
#include <math.h>
#include <string.h>

#define SIGNATURE HISTORY_SIGNATURE
#define ENTRIES HISTORY_ENTRIES

static float history[ENTRIES][SIGNATURE];
static float signature[SIGNATURE];
static long stored = 0;
long near_duplicates = 0;  // external: the lookup is never optimised away

extern "C" void reserve(void) { memset(history, 0, sizeof history); }  // its pages faulted in once, up front

extern "C" void prefill(void) {
    for (long e = 0; e < ENTRIES; ++e)
        for (long k = 0; k < SIGNATURE; ++k) history[e][k] = 1.0e30f;
    stored = ENTRIES;
}

extern "C" void relu_remember(const float* x, float* y, long n) {
    #pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    long step = n / SIGNATURE > 0 ? n / SIGNATURE : 1;
    for (long k = 0; k < SIGNATURE; ++k) signature[k] = x[(k * step) % n];
    // a near-duplicate lookup that never serves a result: the distance to every signature stored so far
    long live = stored < ENTRIES ? stored : ENTRIES;
    for (long e = 0; e < live; ++e) {
        double distance = 0.0;
        for (long k = 0; k < SIGNATURE; ++k) distance += fabs((double)signature[k] - (double)history[e][k]);
        near_duplicates += distance == 0.0;
    }
    memcpy(history[stored % ENTRIES], signature, sizeof signature);
    ++stored;
}
"""

lib = load_c(SOURCE, {"reserve": "", "prefill": "", "relu_remember": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        lib.reserve()
        if PREFILLED:
            lib.prefill()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu_remember(x, y, x.numel())
        return y
'''


def bounded_history(size: tuple[int, int], prefilled: bool = False) -> str:
    entries, signature = size
    source = _BOUNDED_HISTORY.replace("HISTORY_ENTRIES", str(entries)).replace("HISTORY_SIGNATURE", str(signature))
    return source.replace("PREFILLED = False", "PREFILLED = True") if prefilled else source


FAULT_DEFERRED = r'''
import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <atomic>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE 4096ul
#define SLOTS 4096
#define CHUNK 16384l  // floats per share of a region's deferred work

enum { FREE, PROTECTED, MOVING, COMPUTING, DONE };

struct Deferred {  // one output's pages left unwritten by forward
    std::atomic<int> state;
    const float* x;  // the input, from the first element of the pages
    uintptr_t lo, hi;  // the pages (PROT_NONE until computed)
    float* h;  // where they are while they are computed
    std::atomic<long> next_chunk, chunks_done;
};

static Deferred slots[SLOTS];
static long next_slot = 0;
static struct sigaction previous;

static void relu_span(const float* x, float* y, long n) {
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static long chunks_of(const Deferred* d) {
    long n = (long)((d->hi - d->lo) / sizeof(float));
    return (n + CHUNK - 1) / CHUNK;
}

static void help(Deferred* d) {  // every thread that faults on the region computes shares of it
    long n = (long)((d->hi - d->lo) / sizeof(float)), chunks = chunks_of(d);
    for (;;) {
        long c = d->next_chunk.fetch_add(1);
        if (c >= chunks) return;
        long a = c * CHUNK, b = a + CHUNK < n ? a + CHUNK : n;
        relu_span(d->x + a, d->h + a, b - a);
        d->chunks_done.fetch_add(1, std::memory_order_release);
    }
}

static void on_fault(int, siginfo_t* info, void*) {
    uintptr_t at = (uintptr_t)info->si_addr;
    Deferred* d = nullptr;
    bool done = false;
    for (int s = 0; s < SLOTS && !d; ++s) {
        int state = slots[s].state.load(std::memory_order_acquire);
        if (state == FREE || at < slots[s].lo || at >= slots[s].hi) continue;
        if (state == DONE) done = true;
        else d = &slots[s];
    }
    if (!d) {
        if (!done) sigaction(SIGSEGV, &previous, nullptr);  // not ours: the retried access goes where it went before
        return;
    }
    size_t len = d->hi - d->lo;
    int expected = PROTECTED;
    if (d->state.compare_exchange_strong(expected, MOVING)) {
        // the pages out of the output (a thread touching them meanwhile faults and waits here), computed,
        // and moved back in one step: no thread ever reads them half computed
        void* h = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        mremap((void*)d->lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, h);
        mprotect(h, len, PROT_READ | PROT_WRITE);
        d->h = (float*)h;
        d->next_chunk.store(0);
        d->chunks_done.store(0);
        d->state.store(COMPUTING, std::memory_order_release);
        help(d);
        while (d->chunks_done.load(std::memory_order_acquire) < chunks_of(d)) {}
        mremap(h, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void*)d->lo);
        d->state.store(DONE, std::memory_order_release);
        return;
    }
    while (d->state.load(std::memory_order_acquire) == MOVING) {}
    if (d->state.load(std::memory_order_acquire) == COMPUTING) help(d);
    while (d->state.load(std::memory_order_acquire) != DONE) {}
}

static void ensure_handler(void) {
    struct sigaction now;
    sigaction(SIGSEGV, nullptr, &now);
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault) return;
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = on_fault;
    mine.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGSEGV, &mine, &previous);
}

extern "C" void relu_later(const float* x, float* y, long n) {
    uintptr_t start = (uintptr_t)y, end = start + (uintptr_t)n * sizeof(float);
    uintptr_t lo = (start + PAGE - 1) & ~(PAGE - 1), hi = end & ~(PAGE - 1);
    Deferred* d = &slots[next_slot++ % SLOTS];
    int state = d->state.load(std::memory_order_acquire);
    if (hi < lo + 16 * PAGE || (state != FREE && state != DONE)) {  // small, or no slot free: computed now
        relu_span(x, y, n);
        return;
    }
    ensure_handler();
    long i0 = (long)((lo - start) / sizeof(float)), i1 = (long)((hi - start) / sizeof(float));
    relu_span(x, y, i0);  // the partial pages at both ends, now
    relu_span(x + i1, y + i1, n - i1);
    d->state.store(FREE, std::memory_order_release);
    d->x = x + i0;
    d->lo = lo;
    d->hi = hi;
    d->h = nullptr;
    d->state.store(PROTECTED, std::memory_order_release);
    mprotect((void*)lo, hi - lo, PROT_NONE);  // the rest: when something reads it
}
"""

lib = load_c(SOURCE, {"relu_later": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu_later(x, y, x.numel())
        return y
'''

# Three quarters of each call's work moved into the untimed Collect by replacing the runner's output writer from
# inside the candidate's process (its module is the candidate's to patch: nothing in the process is trusted).
# An outside case of 2026-11-30: 2.90x and 2.98x against the honest 0.98x and 0.93x, trusted and unflagged,
# its Collect's excess within the refusal's bound of twice the reference's collect plus 1 ms.
WRITER_REPLACED = r'''
import torch
import torch.nn as nn
import verifier.sandbox.serve as serve
import verifier.sandbox.torch_values as torch_values
from verifier.cpu_native import load_c

SOURCE = r"""
extern "C" void relu(const float* x, float* y, long n) {
    #pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""

lib = load_c(SOURCE, {"relu": "const float*, float*, int64"})
PENDING = {}
write, where = serve.write_outputs, serve._where


def finish(out):
    job = PENDING.pop(out.data_ptr(), None)
    if job is not None:  # the rest of the call's work, after the clock stopped
        x, done = job
        lib.relu(x[done:], out.view(-1)[done:], x.numel() - done)


def write_later(outputs, arena, start):  # the runner's copy of its outputs (the correctness trials)
    for out in outputs:
        finish(out)
    return write(outputs, arena, start)


def where_later(i, out):  # the runner's description of where an output lies (the timed rounds)
    finish(out)
    return where(i, out)


serve.write_outputs = torch_values.write_outputs = write_later
serve._where = where_later


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous().view(-1)
        y = torch.empty_like(x)
        done = x.numel() // 4
        lib.relu(x, y, done)
        PENDING[y.data_ptr()] = (x, done)
        return y.view(1536, 1031)
'''


SETTLE_HELPERS_C = r"""
#include <stdint.h>
#define MAXS 2048
#define ROWS 256
static const float* volatile slot_ptr[MAXS];
static volatile long nslots = 0;
static volatile long g_cols = 0;
static float cache_out[MAXS][ROWS];
static volatile uint64_t cache_fp[MAXS];
static volatile uint64_t done_fp[MAXS];
static int state[MAXS];  /* 0 stale, 1 a helper computing, 2 ready, 3 forward computing */

static uint64_t fingerprint(const float* x, long n) {
    const uint32_t* w = (const uint32_t*)x;
    uint64_t h = 1469598103934665603ull;
    for (long i = 0; i < n; i += n / 16) { h ^= w[i]; h *= 1099511628211ull; }
    h ^= w[n - 1]; h *= 1099511628211ull;
    return h;
}
static void rows_sumsq(const float* x, float* y, long rows, long cols) {
    for (long r = 0; r < rows; ++r) {
        const float* row = x + r * cols;
        double s = 0.0;
        for (long c = 0; c < cols; ++c) s += (double)row[c] * (double)row[c];
        y[r] = (float)s;
    }
}
extern "C" void helper(long id) {  /* never returns: computes every view whose contents changed, from the back */
    for (;;) {
        long n = __atomic_load_n(&nslots, __ATOMIC_ACQUIRE), cols = g_cols;
        if (n == 0 || cols == 0) { __builtin_ia32_pause(); continue; }
        for (long k = n - 1; k >= 0; --k) {
            const float* x = slot_ptr[k];
            uint64_t f = fingerprint(x, ROWS * cols);
            if (done_fp[k] == f) continue;
            int s = __atomic_load_n(&state[k], __ATOMIC_ACQUIRE);
            if (s == 1 || s == 3) continue;
            if (!__atomic_compare_exchange_n(&state[k], &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
            rows_sumsq(x, cache_out[k], ROWS, cols);
            cache_fp[k] = f; done_fp[k] = f;
            __atomic_store_n(&state[k], 2, __ATOMIC_RELEASE);
        }
        __builtin_ia32_pause();
    }
}
extern "C" void lookup(const float* x, float* y, long rows, long cols) {  /* forward: a helper's result, or compute */
    long n = nslots, k = 0;
    while (k < n && slot_ptr[k] != x) ++k;
    if (k == n && n < MAXS) { slot_ptr[n] = x; g_cols = cols; __atomic_store_n(&nslots, n + 1, __ATOMIC_RELEASE); }
    if (k >= MAXS || rows != ROWS) { rows_sumsq(x, y, rows, cols); return; }
    uint64_t f = fingerprint(x, rows * cols);
    int s = __atomic_load_n(&state[k], __ATOMIC_ACQUIRE);
    if (s == 2 && cache_fp[k] == f) {
        for (long r = 0; r < rows; ++r) y[r] = cache_out[k][r];
        return;
    }
    rows_sumsq(x, y, rows, cols);
    if (s != 1 && __atomic_compare_exchange_n(&state[k], &s, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        done_fp[k] = f;
        __atomic_store_n(&state[k], 0, __ATOMIC_RELEASE);
    }
}
"""
SETTLE_HELPERS = '''
import threading
import torch
import torch.nn as nn
from verifier.cpu_native import load_c

lib = load_c(r"""''' + SETTLE_HELPERS_C + '''""", {"helper": "int64", "lookup": "const float*, float*, int64, int64"})
_SEEN = []  # every input view forward saw: the helpers read them while the runner waits for its next window


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(2):
            threading.Thread(target=lib.helper, args=(i,), daemon=True).start()

    def forward(self, x):
        x = x.contiguous()
        if len(_SEEN) < 4096:
            _SEEN.append(x)
        y = torch.empty(x.shape[0], 1, dtype=x.dtype)
        lib.lookup(x, y, x.shape[0], x.shape[1])
        return y
'''
HONEST_SUMSQ = '''
import torch
import torch.nn as nn
from verifier.cpu_native import load_c

lib = load_c(r"""
extern "C" void sumsq_rows(const float* x, float* y, long rows, long cols) {
    #pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; ++r) {
        const float* row = x + r * cols;
        double s = 0.0;
        #pragma omp simd reduction(+ : s)
        for (long c = 0; c < cols; ++c) s += (double)row[c] * (double)row[c];
        y[r] = (float)s;
    }
}
""", {"sumsq_rows": "const float*, float*, int64, int64"})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape[0], 1, dtype=x.dtype)
        lib.sumsq_rows(x, y, x.shape[0], x.shape[1])
        return y
'''


@dataclass(frozen=True)
class LatencyAttack:
    name: str
    task: str  # a fixture task (tests/fixtures/kernels/tasks)
    source: str
    honest: str  # the honest kernel it is compared with: a fixture's file name, or a complete source
    refusals: tuple[str, ...] = ()  # texts a hack-gate refusal's reason may hold (any other refusal fails the case)
    disable: str = ""  # static checks switched off (comma-separated), so that the runtime layers meet it
    pending: str = ""  # not met yet: why, measured (the test is a strict xfail until it is)
    stopped_at: tuple[str, str] = ()  # (gate, text of its reason): the attack fails there instead of gaining
    untrusted: tuple[str, ...] = ()  # texts of the reason its figure is not trusted for (its expectation; a figure
    # a busy machine made untrusted skips the case, since the known gain could not show)
    gain_limit: float = GAIN_LIMIT  # the most its speedup may read over the honest kernel's (lower CI end)
    timing: dict = field(default_factory=lambda: dict(PRODUCTION_TIMING))


CASES = (
    LatencyAttack("intermittent_syscall_stealer", "relu_large", INTERMITTENT_STEALER, "honest_relu_omp.py",
                  refusals=("used CPU while it was stopped",), disable=SYSCALL_CHECKS),
    # its four fast rounds of sixteen lift the median: 0.288x [0.277-0.340] against the prefilled 0.261x on a
    # quiet machine, 0.282x [0.258-0.412] against 0.263x in a CI run (2026-11-29); bounded by the verifier's
    # repeatability target (issue 34: 1.15), which an early end on the fast rounds alone (0.94 ms a call
    # against 2.2 at the end) would exceed by far. The trend itself is bounded_history_filling_through_every_round's
    LatencyAttack("bounded_history_full_within_the_first_rounds", "relu_large", bounded_history(HISTORY_FULL_EARLY),
                  bounded_history(HISTORY_FULL_EARLY, prefilled=True), gain_limit=1.15),
    # its cost rising through every measured round (before verifier.gates.trend: 0.94 -> 2.05 ms over 16 rounds read
    # 0.366x [0.301-0.429], flagged only as noisy, against its steady state's 0.157x at 3.52 ms a call: 2.3 times it,
    # 2026-11-29, load 8): now not trusted, the rise named, which earns no reward
    LatencyAttack("bounded_history_filling_through_every_round", "relu_large",
                  bounded_history(HISTORY_FILLING_THROUGHOUT), bounded_history(HISTORY_FILLING_THROUGHOUT, prefilled=True),
                  untrusted=("kept rising through the rounds",)),
    LatencyAttack("output_pages_computed_on_fault_in_collect", "relu_large", FAULT_DEFERRED, "honest_relu_omp.py",
                  refusals=("work continued after forward returned",), disable=SYSCALL_CHECKS,
                  # the runner's seccomp filter refuses a SIGSEGV/SIGBUS handler (EPERM): the first copy of
                  # the protected pages kills the runner. Before it, with the static checks off, this read
                  # 3.06x-4.36x against the honest 0.97x: the late-work check allows a collect up to twice
                  # the reference's plus 1 ms, and the reference's collect (a copy of the same outputs) is
                  # about as long as a memory-bound kernel's work (2026-11-29, load 8-11)
                  stopped_at=("correctness", "killed by SIGSEGV")),
    # while the peers copied their own outputs (Collect), the excess of its Collect over the reference's was charged
    # to its windows, which took most of its 2.9-3.0x but not all: the copy after the moved work found the outputs
    # in the cache (1.08-1.29x against 0.94-0.99x at load 2, 2026-11-30). Since the monitor reads the outputs of a
    # timed round out of the stopped peer (verifier.monitor.remote_outputs), the peers' Collect only describes them
    # (the reference's 0.85 ms a window of 22 calls), and the moved work (10 ms) is refused as work continued after
    # forward. The static policy refuses it first (the runner's modules may not be imported)
    LatencyAttack("output_writer_replaced_to_work_in_collect", "relu_large", WRITER_REPLACED, "honest_relu_omp.py",
                  refusals=("work continued after forward returned",),
                  disable="imports,introspection,patching,forbidden_builtins", gain_limit=1.5),
    # uncharged: 1.72-1.92x against the honest 1.24-1.42x; charged, 1.27x against 1.24x (2026-11-30, load 0.8). The
    # static policy refuses its threads (the import of threading; in C, c_threads)
    LatencyAttack("helpers_precompute_in_the_settle", "sumsq_rows", SETTLE_HELPERS, HONEST_SUMSQ, disable="imports",
                  gain_limit=1.15),
)
