"""Triton backend without a GPU: AOT compile for sm_90 in the confined builder, and interpreter
correctness (needs triton)."""

from __future__ import annotations

import ast

import pytest
import torch
from build_jobs import build_own
from fresh_python import run_fresh

from kernelbench_npu.known_good import known_good, solution_source
from verifier.backends.scaffolds import fenced_blocks, scaffold_sections
from verifier.backends.triton_backend import TritonBackend, kernels_only_source, triton_version

pytestmark = pytest.mark.skipif(triton_version() is None,
                                reason="triton is not installed (pip install 'evokernel[triton]')")


def scaffold_example() -> str:
    return fenced_blocks(dict(scaffold_sections("triton"))["Worked example: ReLU"], "python")[0]


@pytest.fixture(autouse=True)
def restore_interpreter_flag(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # the backend sets it; keep tests independent


def test_scaffold_example_compiles_ahead_of_time_for_sm90(tmp_path):
    outcome = build_own(TritonBackend(), scaffold_example(), tmp_path, 120)
    assert outcome.ok, outcome.detail
    assert outcome.note.startswith("relu_kernel: cubin for sm_90 (BLOCK_SIZE=1024)")
    again = build_own(TritonBackend(), scaffold_example(), tmp_path, 120)
    assert again.ok and again.cached and again.note == outcome.note


def test_compile_errors_carry_tritons_caret(tmp_path):
    bad = scaffold_example().replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 1000")
    outcome = build_own(TritonBackend(), bad, tmp_path, 120)
    assert not outcome.ok and outcome.gate == "compile"
    assert "kernel relu_kernel: CompilationError" in outcome.detail
    assert "arange's range must be a power of 2" in outcome.detail and "^" in outcome.detail


MATMUL = '''
import torch, triton, triton.language as tl
import torch.nn as nn

@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)

class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.empty(a.shape[0], b.shape[1])
        mm_kernel[(1, 1)](a, b, c, a.shape[0], b.shape[1], a.shape[1], BM=BLK, BN=BLK, BK=BLK, num_stages=3)
        return c
'''


def test_shared_memory_beyond_the_hardware_limit_is_a_compile_error(tmp_path):
    outcome = build_own(TritonBackend(), MATMUL.replace("class ModelNew", "BLK = 128\nclass ModelNew"), tmp_path)
    assert not outcome.ok and "out of resources: shared memory" in outcome.detail
    small = build_own(TritonBackend(), MATMUL.replace("class ModelNew", "BLK = 32\nclass ModelNew"), tmp_path)
    assert small.ok, small.detail


def test_compile_never_runs_the_candidates_top_level_code(tmp_path):
    hostile = scaffold_example() + "\nraise SystemExit('top-level code ran')\nopen('/tmp/x', 'w')\n"
    kept = kernels_only_source(ast.parse(hostile))
    assert "SystemExit" not in kept and "class ModelNew" not in kept and "def relu_kernel" in kept
    assert build_own(TritonBackend(), hostile, tmp_path, 120).ok


def test_a_candidate_without_kernels_fails_compile(tmp_path):
    outcome = build_own(TritonBackend(), "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n", tmp_path, 60)
    assert not outcome.ok and "no @triton.jit kernel" in outcome.detail


def test_interpreter_runs_an_honest_kernel_correctly_and_a_wrong_one_wrongly(tmp_path):
    script = f"""
    import json, torch
    from pathlib import Path
    from verifier.backends.triton_backend import TritonBackend
    example = {scaffold_example()!r}
    backend = TritonBackend()
    x = torch.randn(3000, device=backend.device())
    honest = backend.load(example, {str(tmp_path / "a")!r})
    wrong = backend.load(example.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.1)"), {str(tmp_path / "b")!r})
    print(json.dumps({{"device": backend.device(), "honest": torch.equal(honest()(x), torch.relu(x)),
                      "wrong": torch.allclose(wrong()(x), torch.relu(x))}}))
    """
    result = run_fresh(script, tmp_path)  # interpreted triton stays out of this worker (see fresh_python)
    assert result == {"device": "cuda" if torch.cuda.is_available() else "cpu", "honest": True, "wrong": False}


def test_availability_lists_what_each_gate_can_do_here():
    availability = TritonBackend().availability()
    if torch.cuda.is_available():
        assert availability.available
        return
    assert availability.line().endswith(
        "compile yes (triton %s, AOT for sm_90), correctness yes (interpreter, small shapes), latency no (no GPU)" % triton_version())


def test_the_compile_imports_config_tables_and_plain_helpers_but_no_other_top_level_calls():
    source = '''import triton
from triton import Config as C
import os
configs = [triton.Config({"BLOCK": b}, num_warps=w, pre_hook=lambda a: a["y"].zero_()) for b in (64, 128) for w in range(2, 5)]
short = [C({"BLOCK": 16})]
escape = triton.runtime.jit.os.system("id")
hidden = [triton.Config(__import__("os").system("id"))]
weights = torch.zeros(3)
def prune(configs, named_args, limit=128):
    return configs
def loaded(path=open("/etc/passwd").read()):
    pass
'''
    kept = kernels_only_source(ast.parse(source))
    assert "configs = [triton.Config" in kept and "short = [C(" in kept and "def prune(" in kept
    assert "escape" not in kept and "hidden" not in kept and "weights" not in kept and "def loaded" not in kept


@pytest.mark.parametrize("task_id", sorted(known_good("triton")))
def test_each_known_good_triton_solution_passes_the_static_policy(task_id):
    """The shipped Triton solutions (run on a GPU by tests/backends/test_backends_gpu.py and
    benchmarks.gpu_fidelity) pass the parent-side tier here: the static hack gate and the backend's
    precheck (syntax, launch reading), well under a second each."""
    from verifier.backends import get_backend
    from verifier.gates.hack import static_gate

    source, backend = solution_source(task_id, "triton"), get_backend("triton")
    gate = static_gate(source, "float32", (), backend.static_imports)
    assert gate.passed, gate.detail
    assert not backend.precheck(source)


def test_the_builder_names_tritons_installation_without_hashing_it(monkeypatch):
    """The builder's kernel cache is thrown away with its work directory: Triton's key for it is the version and
    libtriton's size and mtime, not a hash of ~500 MB read again by every build (0.3 s of its ~2 s of CPU)."""
    from pathlib import Path

    import triton
    from triton.runtime import cache

    from verifier.backends import triton_build

    monkeypatch.setattr(cache, "triton_key", cache.triton_key)  # put back after the test
    triton_build._name_the_installation_cheaply()
    key = cache.triton_key()
    lib = Path(triton.__file__).parent / "_C" / "libtriton.so"
    assert key.startswith(f"{triton.__version__}-") and f"libtriton.so:{lib.stat().st_size}:" in key
    named = type("Hashed", (), {"hash": lambda self: "h"})()
    assert cache.get_cache_key(named, named, named, {}).startswith(key)  # what the compiler keys its cache by
