"""triton-ascend without an NPU: the real compile gate (triton-ascend + bishengir-compile, HIVM level)
on the task's recorded launches, interpreter correctness at small shapes, latency unavailable.

Everything here runs the real toolchain (installed by the ``triton_ascend`` fixture when missing).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kernelbench_npu.spec import TaskSpec
from verifier.api import verify
from verifier.backends.scaffolds import fenced_blocks, scaffold_sections
from verifier.backends.triton_ascend import TritonAscendBackend
from verifier.backends.triton_ascend.diagnostics import UB_BYTES
from verifier.backends.triton_backend import triton_version
from verifier.settings import VerifySettings
from build_jobs import Compiled, compile_own

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "triton_ascend_kernels"
BUNDLED = ROOT / "kernelbench_npu" / "problems" / "level1"
needs_interpreter = pytest.mark.skipif(triton_version() is None, reason="upstream triton (the interpreter) is not installed")


def task_from(path: Path, task_id: str) -> TaskSpec:
    source = path.read_text()
    return TaskSpec(task_id=task_id, level=1, category="test", name=path.stem, variant="triton-ascend",
                    dtype="float32", source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(),
                    atol=1e-5, rtol=1e-4, original_shapes="{}", adapted_shapes="{}", lint_status="ok",
                    lint_reason=None, reference_ms=None, problem_path=path)


SOFTMAX = task_from(BUNDLED / "013_softmax.py", "L1/013_softmax")  # 64 x 32768: a one-tile row overflows UB
VECTOR_ADD = task_from(KERNELS / "task_vector_add.py", "T/vector_add")


def kernel(stem: str) -> str:
    return (KERNELS / f"{stem}.py").read_text()


def scaffold_example() -> str:
    return fenced_blocks(dict(scaffold_sections("triton-ascend"))["Worked example: row softmax"], "python")[0]


def compile_for(task: TaskSpec, source: str, cache: Path) -> Compiled:
    """The backend's own compile job for ``source`` through the monitor's build service (confined builder)."""
    backend = TritonAscendBackend()
    return compile_own(backend, source, cache, 300, backend.compile_context(task))


@needs_interpreter
@pytest.mark.parametrize("task, source", [(VECTOR_ADD, "vector_add"), (SOFTMAX, "scaffold")], ids=["vector_add", "row_softmax"])
def test_honest_kernels_pass_hivm_compile_and_interpreter_correctness(triton_ascend, task, source, tmp_path):
    code = scaffold_example() if source == "scaffold" else kernel(source)
    verdict = verify(task, code, "triton-ascend", VerifySettings.for_tests(tmp_path))
    names = [(g.name, g.passed) for g in verdict.gates]
    assert names == [("hack", True), ("compile", True), ("correctness", True), ("latency", False)], verdict.feedback
    compile_gate = verdict.gate("compile")
    assert compile_gate.reason.startswith(f"HIVM-level pass for {triton_ascend.soc}"), compile_gate.reason
    assert "hivmc" in compile_gate.reason and "UB" in compile_gate.reason
    assert verdict.gate("latency").reason == "latency unavailable here: needs torch_npu and an NPU"
    assert verdict.feasible and not verdict.passed


def test_a_tile_beyond_the_unified_buffer_fails_with_bishengirs_message(triton_ascend, tmp_path):
    outcome = compile_for(SOFTMAX, kernel("softmax_one_tile"), tmp_path)
    assert not outcome.ok
    first = outcome.diagnostics.splitlines()[0]
    assert first.startswith("kernel softmax_kernel (bishengir): error: ub overflow, requires"), first
    assert f"bits while {UB_BYTES * 8} bits available!" in first
    # the specialisation comes from the task's real launch: BLOCK = next_power_of_2(32768), 64 rows
    assert "kernel softmax_kernel(x_ptr=*fp32, y_ptr=*fp32, n_cols=i32, BLOCK=32768), grid (64,)" in outcome.diagnostics
    assert "candidate.py:9: error: ub overflow" in outcome.diagnostics  # located at the kernel's def
    assert "hint: the kernel's live tiles exceed the 192 KB Unified Buffer" in outcome.diagnostics


def test_the_same_kernel_with_a_smaller_block_passes_and_is_cached(triton_ascend, tmp_path):
    fixed = kernel("vector_add")
    first = compile_for(VECTOR_ADD, fixed, tmp_path)
    assert first.ok and not first.cached, first.diagnostics
    assert ("add_kernel(a_ptr=*fp32, b_ptr=*fp32, out_ptr=*fp32, n=i32, BLOCK=4096) grid (256,): HIVM ok, "
            "UB 32 KB of 192 KB planned") in first.diagnostics  # 2 loaded 16 KB tiles (from the HIVM module)
    again = compile_for(VECTOR_ADD, fixed, tmp_path)
    assert again.ok and again.cached and again.diagnostics == first.diagnostics
    assert again.seconds < 0.5


def test_python_syntax_error_fails_with_the_caret(tmp_path):
    broken = kernel("vector_add").replace("def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):",
                                          "def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr)")
    verdict = verify(VECTOR_ADD, broken, "triton-ascend", VerifySettings.for_tests(tmp_path))
    gate = verdict.gate("compile")
    assert gate is not None and not gate.passed
    assert gate.reason.startswith("candidate.py line 10: SyntaxError: expected ':'"), gate.reason
    assert gate.detail.splitlines()[-1].strip() == "^"


def test_triton_front_end_error_keeps_tritons_caret(triton_ascend, tmp_path):
    bad = kernel("vector_add").replace("tl.store(out_ptr + offs, a + b, mask=mask)",
                                       "tl.store(out_ptr + offs, tl.dot(a, b), mask=mask)")
    outcome = compile_for(VECTOR_ADD, bad, tmp_path)
    assert not outcome.ok
    assert "Triton front end at candidate.py line 15:" in outcome.diagnostics
    assert "tl.store(out_ptr + offs, tl.dot(a, b), mask=mask)\n" in outcome.diagnostics
    assert "    ^" in outcome.diagnostics and "Both inputs must be either 2D or 3D" in outcome.diagnostics


def test_grid_beyond_65535_programs_fails_at_launch(triton_ascend, tmp_path):
    tiny = kernel("vector_add").replace("BLOCK = 4096", "BLOCK = 8")
    outcome = compile_for(VECTOR_ADD, tiny, tmp_path)
    assert not outcome.ok
    assert "launches 131072 programs; triton-ascend refuses more than 65535" in outcome.diagnostics.splitlines()[0]


def test_float64_is_reported_as_unsupported(triton_ascend, tmp_path):
    wide = kernel("vector_add").replace("a + b", "(a.to(tl.float64) + b.to(tl.float64)).to(tl.float32)")
    outcome = compile_for(VECTOR_ADD, wide, tmp_path)
    assert not outcome.ok
    assert "LLVM ERROR: unsupported datatype" in outcome.diagnostics.splitlines()[0]
    assert "hint: the Ascend vector unit has no float64" in outcome.diagnostics
    assert "Stack dump" not in outcome.diagnostics and "#3 0x" not in outcome.diagnostics


def test_ascend_only_language_compiles_but_correctness_is_unavailable_here(triton_ascend, tmp_path):
    parallel = scaffold_example().replace("for start in range(0, n_cols, BLOCK):  # pass 2",
                                          "for start in tl.parallel(0, n_cols, BLOCK):  # pass 2")
    verdict = verify(SOFTMAX, parallel, "triton-ascend", VerifySettings.for_tests(tmp_path))
    assert [g.passed for g in verdict.gates] == [True, True, False, False], verdict.feedback
    assert verdict.gate("correctness").reason.startswith("correctness unavailable here: tl.parallel (Ascend-only")


def test_candidate_importing_torch_npu_gets_a_clear_reason(tmp_path):
    source = kernel("vector_add").replace("import torch\n", "import torch\nimport torch_npu\n", 1)
    verdict = verify(VECTOR_ADD, source, "triton-ascend", VerifySettings.for_tests(tmp_path))
    assert verdict.failed_gate == "hack" and "torch_npu" in verdict.gate("hack").reason
    # with the static import check disabled, the backend's own check names the problem
    relaxed = verify(VECTOR_ADD, source, "triton-ascend", VerifySettings.for_tests(tmp_path, disabled_checks=("imports",)))
    reason = relaxed.gate("compile").reason
    assert relaxed.failed_gate == "compile" and reason.startswith("the candidate imports torch_npu, which is not installed here")


def test_seed_items_are_the_guide_sections():
    titles = [item.title for item in TritonAscendBackend().seed_items()]
    assert titles[0] == "Triton on Ascend: Candidate format and contract"
    assert "Triton on Ascend: Block sizes and the 192 KB Unified Buffer" in titles
    assert titles[-1] == "Triton on Ascend: Worked example: row softmax"


def test_ascend_only_feature_list_matches_the_installed_toolchain(triton_ascend):
    import subprocess

    from verifier.backends.triton_ascend.features import ASCEND_ONLY_LANGUAGE
    from verifier.toolchains.env import launch_env

    code = "import json, triton.language as tl; print(json.dumps([n for n in dir(tl) if not n.startswith('_')]))"
    names = json.loads(subprocess.run([str(triton_ascend.python), "-c", code], capture_output=True, text=True,
                                      env=launch_env(), check=True).stdout)
    if triton_version() is None:
        pytest.skip("upstream triton is not installed")
    import triton.language as upstream

    callable_only = {n for n in set(names) - set(dir(upstream)) if n[0].islower()}
    # internal names that are no language features (modules, types, the semantic helper)
    assert callable_only - {"advance", "function_type", "nv_tma_desc_type", "semantic"} == set(ASCEND_ONLY_LANGUAGE)


def test_benchmark_variant_uses_the_npu_size_profile():
    from kernelbench_npu.variants import variant_for

    variant = variant_for("triton-ascend", ["fp32", "fp16"])
    assert variant.size_profile == "original" and variant.alignment_bytes == 32
    assert variant.dtypes == ("float32", "float16")


TUNED = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 1024}), triton.Config({"BLOCK": 65536})], key=["n"])
@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, out, n)
        {extra}
        return out
'''


def test_autotune_configs_are_all_compiled_and_a_failing_one_is_tolerated(triton_ascend, tmp_path):
    outcome = compile_for(VECTOR_ADD, TUNED.replace("{extra}", ""), tmp_path)
    assert outcome.ok, outcome.diagnostics
    lines = outcome.diagnostics.splitlines()
    assert "add_kernel(a_ptr=*fp32, b_ptr=*fp32, out_ptr=*fp32, n=i32, BLOCK=1024) grid (1024,): HIVM ok" in lines[1]
    assert lines[2].startswith("add_kernel(a_ptr=*fp32, b_ptr=*fp32, out_ptr=*fp32, n=i32, BLOCK=65536): autotune "
                               "config rejected (the autotuner skips it): error: ub overflow")


@needs_interpreter
def test_autotune_configs_take_turns_under_the_interpreter_and_the_verdict_says_which_ran(triton_ascend, tmp_path):
    """An NPU would benchmark the configs and keep the fastest; the interpreter must check each of them."""
    tuned = TUNED.replace("{extra}", "").replace('triton.Config({"BLOCK": 65536})', 'triton.Config({"BLOCK": 2048})')
    verdict = verify(VECTOR_ADD, tuned, "triton-ascend", VerifySettings.for_tests(tmp_path))
    assert verdict.gate("correctness").passed, verdict.feedback
    reason = verdict.gate("correctness").reason
    assert "@triton.autotune add_kernel: no benchmarking without an NPU" in reason, reason
    assert "2 of 2 ran (BLOCK=1024" in reason and "BLOCK=2048" in reason, reason


def test_recording_runs_the_candidate_under_the_sandbox_filter(triton_ascend, tmp_path):
    marker = tmp_path / "escaped"
    hostile = TUNED.replace("{extra}", f"__import__('os').system('touch {marker}')")
    outcome = compile_for(VECTOR_ADD, hostile, tmp_path)
    assert not outcome.ok and not marker.exists()
    assert outcome.diagnostics == ("recording the candidate's launches failed: the candidate made a forbidden system "
                                   "call (process creation, exec, signals) and was killed")
