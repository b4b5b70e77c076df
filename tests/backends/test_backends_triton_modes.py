"""Triton without a GPU, the mechanisms behind an honest candidate's pass: the AOT compile in the
builder (a process of its own, compiled mode) while the runner interprets (so the interpreter runs
triton's @jit standard library), one triton mode per process, @triton.autotune configs taken in turn
instead of benchmarked, and jit device helpers compiled inside their callers."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
import torch
from build_jobs import build_own
from fresh_python import run_fresh

from verifier.api import verify
from verifier.backends.triton_aot import device_functions
from verifier.backends.triton_backend import TritonBackend, triton_version
from verifier.settings import VerifySettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verifier"))
from verifier_taskutil import make_task  # noqa: E402

needs_triton = pytest.mark.skipif(triton_version() is None, reason="triton is not installed")
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU triton runs compiled, not interpreted")

# Rows softmax through a device helper and tl.max / tl.sum, autotuned over three configs; the
# early prune drops BLOCK=16, too small for a row (the task's rows have 64 columns at small shapes).
SOFTMAX = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


def _whole_rows(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] >= named_args["cols"]]


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64}, num_warps=2),
                          triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["cols"], prune_configs_by={"early_config_prune": _whole_rows})
@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=-float("inf"))
    e = tl.exp(x - _row_max(x))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=offs < cols)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1])
        return y
'''
SOFTMAX_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
'''


@pytest.fixture(autouse=True)
def restore_interpreter_flag(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


# ---- one mode per process --------------------------------------------------------------------
@needs_triton
def test_a_process_keeps_the_mode_of_its_first_triton_import(tmp_path):
    result = run_fresh("""
    import json, os
    os.environ["TRITON_INTERPRET"] = "0"
    import triton.language
    from verifier.backends.triton_modes import interpreted_now, use_mode
    use_mode(False)  # the same mode again is fine
    try:
        use_mode(True)
        error = ""
    except RuntimeError as exc:
        error = str(exc)
    print(json.dumps({"interpreted": interpreted_now(), "error": error}))
    """, tmp_path)
    assert result["interpreted"] is False
    assert result["error"].startswith("triton was already imported compiled in this process")


@needs_triton
@no_gpu
def test_the_interpreter_runs_triton_stdlib_kernels_while_the_builder_compiles(verifier_cache):
    """The builder compiles the kernels (compiled mode) and the runner runs them interpreted: two
    processes, so neither mode gets in the other's way."""
    verdict = verify(make_task(SOFTMAX_TASK, "test/softmax_rows"), SOFTMAX, "triton", VerifySettings.for_tests(verifier_cache))
    assert [(g.name, g.passed) for g in verdict.gates[:3]] == [("hack", True), ("compile", True), ("correctness", True)]
    assert "_row_max: device function, compiled inside softmax_kernel" in verdict.gate("compile").detail


# ---- @triton.autotune under the interpreter ----------------------------------------------------
@needs_triton
@no_gpu
def test_autotune_configs_are_checked_in_turn_and_the_verdict_says_which_ran(verifier_cache):
    task = make_task(SOFTMAX_TASK, "test/softmax_rows")
    verdict = verify(task, SOFTMAX, "triton", VerifySettings.for_tests(verifier_cache))
    assert verdict.failed_gate == "latency", verdict.feedback  # every gate that runs here passed
    reason = verdict.gate("correctness").reason
    assert reason.startswith("@triton.autotune softmax_kernel: no benchmarking without a GPU"), reason
    assert "2 of 2 ran (BLOCK=64, num_warps=2" in reason and "BLOCK=128, num_warps=4" in reason
    assert "BLOCK=16" not in reason  # pruned by the candidate's early_config_prune


@needs_triton
@no_gpu
def test_a_wrong_config_that_is_not_the_first_fails_correctness(verifier_cache):
    """A GPU would pick the fastest config; the interpreter must not check only the first."""
    wrong = SOFTMAX.replace('triton.Config({"BLOCK": 128}, num_warps=4)', 'triton.Config({"BLOCK": 128, "SCALE": 2.0})')
    wrong = wrong.replace("cols, BLOCK: tl.constexpr)", "cols, BLOCK: tl.constexpr, SCALE: tl.constexpr = 1.0)")
    wrong = wrong.replace("e / tl.sum(e, axis=0)", "SCALE * e / tl.sum(e, axis=0)")
    verdict = verify(make_task(SOFTMAX_TASK, "test/softmax_rows"), wrong, "triton", VerifySettings.for_tests(verifier_cache))
    assert verdict.failed_gate == "correctness", verdict.feedback
    assert "BLOCK=128, SCALE=2.0" in verdict.gate("correctness").detail


# ---- device functions --------------------------------------------------------------------------
def test_jit_functions_called_from_kernels_and_never_launched_are_device_functions():
    tree = ast.parse('''
@triton.jit
def helper(x):
    return x * 2
@triton.jit
def both(x):
    return x + 1
@triton.jit
def kernel(p):
    tl.store(p, both(helper(tl.load(p))))
@triton.jit
def unused(p):
    pass
def forward(x):
    kernel[(1,)](x)
    both[(1,)](x)
''')
    assert device_functions(tree, {"helper", "both", "kernel", "unused"}) == {"helper": "kernel"}


@needs_triton
def test_a_device_helper_compiles_inside_its_caller_and_its_errors_still_fail(tmp_path):
    backend = TritonBackend()
    outcome = build_own(backend, SOFTMAX, tmp_path / "ok", 300)
    assert outcome.ok, outcome.detail
    assert "_row_max: device function, compiled inside softmax_kernel" in outcome.note
    broken = SOFTMAX.replace("return tl.max(x, axis=0)", "return tl.max(x, axis=0) + tl.arange(0, 100)")
    failed = build_own(backend, broken, tmp_path / "broken", 300)
    assert not failed.ok and failed.detail.startswith("kernel softmax_kernel:"), failed.detail
    assert "arange's range must be a power of 2" in failed.detail
