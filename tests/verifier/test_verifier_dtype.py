"""A task's dtype reaches the verifier's inputs, parameters and reference (kernelbench_npu.instantiate).

Regression test of issue 14: an fp16 task used to be verified with fp32 inputs, so a kernel that
reads the data as ``float*`` passed an fp16 Sigmoid task. Real verifier, cpu backend.
"""

from __future__ import annotations

import pytest

from verifier.api import VerifySettings, verify
from verifier_taskutil import make_task

SIGMOID_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


batch_size = 16
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""

_CANDIDATE = '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <cmath>
extern "C" void sigmoid(const {ctype}* x, {ctype}* out, long n) {{
    for (long i = 0; i < n; ++i) {{ float v = (float)x[i]; out[i] = ({ctype})(1.0f / (1.0f + std::exp(-v))); }}
}}
"""

lib = load_c(SOURCE, {{"sigmoid": "const {arg}*, {arg}*, int64"}})


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        lib.sigmoid(x, out, x.numel())
        return out
'''
FP16_KERNEL = _CANDIDATE.format(ctype="_Float16", arg="half")
FP32_KERNEL = _CANDIDATE.format(ctype="float", arg="float")


@pytest.fixture()
def fp16_task(tmp_path):
    return make_task(SIGMOID_TASK, task_id="T/sigmoid_fp16", tmp_dir=tmp_path, dtype="float16", atol=1e-2, rtol=1e-2)


def _settings(cache) -> VerifySettings:
    return VerifySettings(cache_dir=cache, seed=7, latency_rounds=3, window_ms=2.0, warmup_rounds=1)


def test_an_fp16_kernel_passes_an_fp16_task(fp16_task, verify_cache):
    verdict = verify(fp16_task, FP16_KERNEL, "cpu", _settings(verify_cache))
    assert not verdict.infrastructure_error
    assert verdict.feasible, verdict.feedback


def test_a_kernel_reading_fp16_data_as_fp32_is_rejected_with_the_reason(fp16_task, verify_cache):
    verdict = verify(fp16_task, FP32_KERNEL, "cpu", _settings(verify_cache))
    assert verdict.failed_gate == "correctness"
    reason = verdict.gate("correctness").reason
    assert "must have dtype float32, got torch.float16" in reason, reason
