"""Shared pieces of the CLI tests: a tiny build from a KernelBench-layout folder (ids like
KB-L1/1_ReLU), built and linted for real once per session, with one quarantined task."""

from __future__ import annotations

import pytest

from run_shared import once_per_run

RELU = '''import torch
import torch.nn as nn

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {body}


batch_size = 8
dim = 4099


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


@pytest.fixture(scope="session")
def kb_build(tmp_path_factory):
    """A cpu build of KB-L1/1_ReLU, KB-L1/2_Tanh and KB-L1/3_Zeros (quarantined: constant output),
    built once per test run."""
    from kernelbench_npu.spec import load_build

    return load_build(once_per_run(tmp_path_factory, "cli-kb-build", _build_kb))


def _build_kb(root):
    from kernelbench_npu.build import build_benchmark

    level = root / "KernelBench" / "level1"
    level.mkdir(parents=True)
    for name, body in (("1_ReLU", "torch.relu(x)"), ("2_Tanh", "torch.tanh(x)"), ("3_Zeros", "torch.zeros_like(x)")):
        (level / f"{name}.py").write_text(RELU.format(body=body))
    summary = build_benchmark("cpu", sources=[root / "KernelBench"], levels=(1,), out=root / "build",
                              include_bundled=False)
    assert (summary.ok, summary.quarantined) == (2, 1), summary
    return root / "build"
