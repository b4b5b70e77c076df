"""SLEEF on the CPU backend: a source including <sleef.h> is linked with -lsleef, and the scaffold's
SLEEF example passes every gate on a sigmoid task (Debian's libsleef-dev; scripts/run_tests.sh
installs it where missing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from verifier_taskutil import make_task

from verifier.api import verify
from verifier.backends import get_backend
from verifier.cpu_native import header_available, link_flags
from verifier.settings import VerifySettings

EXAMPLE = (Path(__file__).resolve().parents[2] / "verifier" / "backends" / "cpu_example_sleef.txt").read_text()
SLEEF = header_available("sleef.h")
needs_sleef = pytest.mark.skipif(not SLEEF, reason="libsleef-dev is not installed (apt-get install libsleef-dev)")

SIGMOID_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(48, 1003)]


def get_init_inputs():
    return []
'''

CANDIDATE = f'''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
{EXAMPLE}"""

lib = load_c(SOURCE, {{"sigmoid": "const float*, float*, int64"}})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.sigmoid(x, y, x.numel())
        return y
'''


def test_sleef_is_linked_only_when_its_header_is_included():
    assert link_flags(EXAMPLE) == ("-lsleef",)
    assert link_flags("#include <math.h>\n// #include <sleef.h>\n") == ()


@needs_sleef
def test_the_scaffold_sleef_example_passes_every_gate(tmp_path, verify_cache):
    assert EXAMPLE.strip() in get_backend("cpu").scaffold(None)
    task = make_task(SIGMOID_TASK, "sleef/sigmoid", tmp_path)  # 48 x 1003: a scalar tail after the vectors
    verdict = verify(task, CANDIDATE, "cpu", VerifySettings.for_tests(verify_cache))
    assert verdict.passed, verdict.feedback
