"""The monitor's observation from outside the runner (verifier.monitor.cpu_sampler, outside, torch_glue,
code_map, perf_events), on real processes: the kernel's CPU-clock samples of a child that computes in
torch, in a library of its own, or creates threads during a watched block; torch's glue told from its
compute by the function names of the installed libtorch_cpu.so; the decisions on counts; and the in-process
observer's namespace rule (an operator outside aten is torch's unless the monitor proved it the candidate's).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from verifier.monitor import outside, perf_events, torch_glue
from verifier.monitor.code_map import FOREIGN, OWN, RUNTIME, TORCH, kind_of
from verifier.monitor.cpu_sampler import CallSamples, CpuSampler
from verifier.monitor.elf_functions import table_for
from verifier.sandbox import native_build, observer


def _perf_unavailable() -> str:
    try:
        perf_events.Rings.open([os.getpid()], [0], 100_000).close()
        return ""
    except OSError as exc:
        return f"the kernel will not open a CPU-clock sampler here: {exc}"


needs_perf = pytest.mark.skipif(bool(_perf_unavailable()), reason=_perf_unavailable() or "-")
TORCH_CPU = str(Path(__import__("torch").__file__).parent / "lib" / "libtorch_cpu.so")
SPIN_C = r"""
extern "C" double spin(long n) {
    double s = 0;
    for (long i = 0; i < n; ++i) s += (double)i * 1e-9 + s * 1e-12;
    return s;
}
"""


class Child:
    """A Python child that does ``work`` in a loop once told to start (a line on stdin)."""

    def __init__(self, work: str, tmp: Path) -> None:
        script = ("import sys, threading, time, ctypes, torch\ntorch.set_num_threads(1)\nprint('ready', flush=True)\n"
                  "sys.stdin.readline()\n" + textwrap.dedent(work))
        self.process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        cwd=tmp, text=True)
        assert self.process.stdout.readline().strip() == "ready"

    def start(self) -> None:
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def _watch(child: Child, libs: Path, seconds: float = 0.4, until: str = "") -> CallSamples:
    """Samples of ``child`` over ``seconds``, or until it prints the line ``until`` (at most a minute: on a
    loaded machine a fixed window can end before the child's work has begun)."""
    sampler = CpuSampler(child.process.pid, str(libs))
    try:
        with sampler.watching() as window:
            child.start()  # inside the block: a child told to start before it may be done before the block begins
            if until:
                ready, _, _ = select.select([child.process.stdout], [], [], 60.0)
                assert ready and child.process.stdout.readline().strip() == until, "the child never finished its work"
            else:
                time.sleep(seconds)
        return window.samples
    finally:
        sampler.close()
        child.close()


@needs_perf
def test_a_child_computing_with_torch_is_seen_in_torch_compute(tmp_path):
    child = Child("x = torch.randn(256, 256)\nwhile True:\n    torch.mm(x, x)\n", tmp_path)
    samples = _watch(child, tmp_path / "libs")
    assert samples.samples > 100, samples
    assert samples.torch_compute > 0.3 * samples.samples, samples  # the rest: Python, allocation, page faults
    assert any("mkl" in f or "gemm" in f for f, _ in samples.compute_functions), samples.compute_functions
    problem = outside.compute_problem(samples.torch_compute, samples.own, samples.samples, samples.compute_functions,
                                      "one call")
    assert problem.startswith("torch computed in forward, observed from outside") and "libtorch_cpu.so" in problem


@needs_perf
def test_a_child_computing_in_its_own_library_is_its_own(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    (tmp_path / "spin.cpp").write_text(SPIN_C)
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "spin.cpp", "-o", str(libs / "kernel.so")], cwd=tmp_path,
                   check=True)
    child = Child(f"lib = ctypes.CDLL({str(libs / 'kernel.so')!r})\nlib.spin.restype = ctypes.c_double\n"
                  "while True:\n    lib.spin(10**7)\n", tmp_path)
    samples = _watch(child, libs)
    assert samples.own > 0.8 * samples.samples and samples.torch_compute == 0, samples
    assert not outside.compute_problem(samples.torch_compute + samples.foreign, samples.own, samples.samples,
                                       samples.compute_functions, "one call")


@needs_perf
def test_threads_that_exist_only_during_the_block_are_counted(tmp_path):
    work = """
        together = threading.Barrier(4)
        def burn():
            together.wait()  # all four alive at once
            end = time.monotonic() + 0.1
            while time.monotonic() < end: pass
        threads = [threading.Thread(target=burn) for _ in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
        print("done", flush=True)
        time.sleep(3600)
    """
    child = Child(work, tmp_path)
    before = len(os.listdir(f"/proc/{child.process.pid}/task"))
    # until its line (a CI run at load 13 ended a 0.5 s window after 3 of 4), and told to start once the block
    # has begun (at load 4-5 the first thread had ended before the block began: 4 seen at once, not 5)
    samples = _watch(child, tmp_path / "libs", until="done")
    assert samples.threads >= before + 4, (before, samples.threads)
    watch = outside.OutsideWatch(None, before, 2)  # the decision alone (no sampler of its own)
    assert "OS threads existed at once during a call" in watch.thread_problem(samples)


@needs_perf
def test_the_samples_agree_with_the_cpu_time_the_kernel_counts(tmp_path):
    child = Child("while True:\n    pass\n", tmp_path)
    samples = _watch(child, tmp_path / "libs")
    expected = samples.cpu_ns / samples.period_ns
    assert 0.7 * expected <= samples.samples + samples.lost <= 1.3 * expected + 5, (samples.samples, expected)
    assert not outside.sampling_problem(samples)


def _call(**counts) -> CallSamples:
    base = dict(samples=0, by_kind=(), by_object=(), own=0, torch_compute=0, foreign=0, compute_functions=(),
                threads=1, thread_ids=frozenset(), cpu_ns=0, lost=0, period_ns=100_000, cost_ns=0)
    return CallSamples(**{**base, **counts})


def test_sampling_switched_off_from_inside_is_a_problem():
    assert "switched off" in outside.sampling_problem(_call(samples=3, cpu_ns=50_000_000))
    assert not outside.sampling_problem(_call(samples=480, cpu_ns=50_000_000))
    assert not outside.sampling_problem(_call(samples=0, cpu_ns=2_000_000))  # too little CPU to judge


def test_the_compute_decision_needs_both_a_share_and_a_count():
    functions = (("libtorch_cpu.so:mkl_blas_sgemm", 30),)
    assert outside.compute_problem(30, 0, 900, functions, "7 calls")
    assert not outside.compute_problem(outside.MIN_COMPUTE_SAMPLES - 1, 0, 900, functions, "7 calls")
    assert not outside.compute_problem(30, 200, 900, functions, "7 calls")  # the candidate's own code did the work
    reason = outside.compute_problem(30, 10, 900, functions, "7 calls")
    assert "75%" in reason and "libtorch_cpu.so" in reason and "mkl_blas_sgemm" in reason


# Names sampled in libtorch_cpu.so during honest forwards (glue) and during forwards that had torch compute.
GLUE = (
    "_ZN2at4_ops10empty_like4callERKNS_6TensorESt8optionalIN3c1010ScalarTypeEES5_INS6_6LayoutEES5_INS6_6DeviceEES5_IbES5_INS6_12MemoryFormatEE",
    "_ZN3c1010Dispatcher17runRecordFunctionERN2at14RecordFunctionESt17reference_wrapperIKNS_14FunctionSchemaEENS_11DispatchKeyENS_14DispatchKeySetE",
    "_ZN2at6detail21empty_strided_genericEN3c108ArrayRefIlEES3_PNS1_9AllocatorENS1_14DispatchKeySetENS1_10ScalarTypeE",
    "_ZN5torch8autograd7as_viewERKN2at6TensorES4_bbSt10unique_ptrINS0_8ViewFuncESt14default_deleteIS6_EESt8functionIFS2_S4_EENS0_12CreationMetaEb",
    "_ZN2at6nativeL9copy_implERNS_6TensorERKS1_b.isra.0",
    "_ZN2at18TensorIteratorBase11fast_set_upERKNS_20TensorIteratorConfigE",
    "_ZN2at11TensorMaker11make_tensorEv",
    "_ZN2at6native18checkAsStridedArgsIlEEvN3c108ArrayRefIT_EES5_S4_.isra.0",
    "_ZN2at6native14reshape_symintERKNS_6TensorEN3c108ArrayRefINS4_6SymIntEEE",
    "_ZN2at12_GLOBAL__N_110CacheEntry22rebuildActiveCallbacksEv",
    "_ZN2at6native16DispatchStubImpl19try_choose_cpu_implEPvS2_S2_",
    "_ZNK3c104impl13OperatorEntry6lookupENS_14DispatchKeySetE",
)
COMPUTE = (
    "mkl_blas_sgemm", "vsTanh", "sgemm_",
    "_ZN2at6native12_GLOBAL__N_128clamp_min_scalar_kernel_implERNS_18TensorIteratorBaseEN3c106ScalarE",
    "_ZN2at6native24structured_clamp_min_out4implERKNS_6TensorERKN3c106ScalarES4_",
    "_ZN2at6native4reluERKNS_6TensorE",
    "_ZN2at3cpu9clamp_minERKNS_6TensorERKN3c106ScalarE",
    "_ZN2at3cpu2mmERKNS_6TensorES3_",
)


@pytest.mark.parametrize("name", GLUE)
def test_torch_glue_is_glue(name):
    assert torch_glue.is_glue(name)


@pytest.mark.parametrize("name", COMPUTE)
def test_torch_compute_is_compute(name):
    assert not torch_glue.is_glue(name)


def test_the_names_are_those_of_the_installed_torch():
    """The lists above name real functions of this torch (a torch upgrade that renames them shows here)."""
    table = table_for(TORCH_CPU)
    assert table is not None and len(table.starts) > 100_000
    names = {table.name(i) for i in range(len(table.starts))}
    missing = [n for n in GLUE + COMPUTE if n not in names]
    assert len(missing) <= 2, missing  # a static function or two may be inlined away by another build


def test_a_lambda_of_a_copy_kernel_is_glue_and_of_a_compute_kernel_is_not():
    copy = ("_ZN3c1012function_refIFvPPcPKlllEE11callback_fnIN2at6native4AVX216VectorizedLoop2dIZZZNSA_18direct_copy"
            "_kernelERNS8_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE13_clEvEUlfE_")
    relu = ("_ZN3c1012function_refIFvPPcPKlllEE11callback_fnIN2at6native4AVX216VectorizedLoop2dIZZZNS9_12_GLOBAL__N_128"
            "clamp_min_scalar_kernel_implERNS8_18TensorIteratorBaseENS_6ScalarEENKUlvE_clEvENKUlvE5_clEvEUlfE_")
    assert torch_glue.is_glue(copy) and not torch_glue.is_glue(relu)
    assert torch_glue.short_name(relu) == "clamp_min_scalar_kernel_impl"


def test_mapped_objects_are_sorted_by_whose_code_they_are(tmp_path):
    libs = str(tmp_path / "libs")
    assert kind_of(f"{libs}/abc/kernel.so", libs) == OWN
    assert kind_of(TORCH_CPU, libs) == TORCH
    assert kind_of(TORCH_CPU.replace("libtorch_cpu.so", "libc10.so"), libs) == RUNTIME
    assert kind_of("/usr/lib/x86_64-linux-gnu/libc.so.6", libs) == RUNTIME
    assert kind_of("/usr/lib/x86_64-linux-gnu/libm.so.6", libs) == OWN  # a kernel's elementwise math
    assert kind_of("/usr/lib/x86_64-linux-gnu/libopenblas.so.0", libs) == FOREIGN  # another BLAS
    assert kind_of("", libs) == FOREIGN and kind_of("/memfd:jit (deleted)", libs) == FOREIGN
    assert kind_of(str(tmp_path / "work" / "copy_of_torch.so"), libs) == FOREIGN
    assert kind_of("/tmp/observer.so", libs, ("/tmp/observer.so",)) == RUNTIME


def test_the_monitor_sorts_code_and_reads_namespaces_without_importing_torch(tmp_path):
    """The monitor never runs torch: finding torch's directory and reading a source that defines no
    operator namespace import nothing of it (importing it cost every `evokernel verify` 1.5-2 s and
    the monitor's memory)."""
    code = ("import sys\n"
            "from verifier.monitor.code_map import TORCH, kind_of\n"
            "from verifier.sandbox.observer import own_namespaces\n"
            f"assert kind_of({TORCH_CPU!r}, {str(tmp_path)!r}) == TORCH\n"
            "assert own_namespaces(['extern \"C\" void f() {}']) == ()\n"
            "print('torch' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "False"


# ---- the in-process observer's namespace rule -------------------------------------------------------
NAMESPACES = """
import json, sys, torch
from verifier.sandbox.arena import Arena
from verifier.sandbox.observer import ObserverPage, PAGE_BYTES, RunnerObserver
page = ObserverPage(Arena.create(PAGE_BYTES))
RunnerObserver(Arena.attach(page.arena.fd), sys.argv[1]).arm()
own = torch.library.Library("z36own", "DEF")
own.define("same(Tensor x) -> Tensor")
own.impl("same", lambda x: x.clone(), "CPU")
w, x = torch.randn(8, 4), torch.randn(3, 4)
packed = torch.ops.mkl._mkl_reorder_linear_weight(w, 3)
seen = {}
def count(name, call):
    before = page.read().forbidden
    with torch.no_grad():
        call()
    now = page.read()
    seen[name] = [now.forbidden - before, list(now.names[before:now.forbidden])]
count("mkl", lambda: torch.ops.mkl._mkl_linear(x, packed, w, None, 3))
count("unknown", lambda: torch.ops.z36own.same(x))
page.allow_namespaces(("z36own",))
count("proven_own", lambda: torch.ops.z36own.same(x))
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def namespaces(tmp_path_factory):
    library, why = observer.library(native_build.machine_root(tmp_path_factory.mktemp("observer")))  # the run's own
    if library is None:
        pytest.skip(f"the native observer cannot be built here: {why}")
    proc = subprocess.run([sys.executable, "-c", NAMESPACES, str(library)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_an_operator_of_torchs_mkl_namespace_is_counted(namespaces):
    count, names = namespaces["mkl"]
    assert count >= 1 and "mkl::_mkl_linear" in names, namespaces


def test_an_unknown_namespace_is_torchs_until_the_monitor_proves_it_the_candidates(namespaces):
    assert namespaces["unknown"][0] >= 1 and "z36own::same" in namespaces["unknown"][1], namespaces
    assert namespaces["proven_own"][0] == 0, namespaces


def test_only_namespaces_the_candidates_sources_define_and_torch_lacks_are_its_own():
    sources = ["TORCH_LIBRARY(myops, m) { m.def(\"f(Tensor x) -> Tensor\"); }",
               "TORCH_LIBRARY_FRAGMENT(mkl, m) {}\nTORCH_LIBRARY_IMPL(aten, CPU, m) {}\nTORCH_LIBRARY(prims, m) {}"]
    assert observer.own_namespaces(sources) == ("myops",)
