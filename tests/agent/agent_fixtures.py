"""Shared pieces of the agent tests: a tiny two-task build and scripted LLM files built from the
ReLU kernels in kernels/ (verified for real; nothing here fakes the verifier or the lake)."""

from __future__ import annotations

import json
from pathlib import Path

from kernelbench_npu.build import build_benchmark
from kernelbench_npu.spec import load_build

KERNELS = Path(__file__).resolve().parent / "kernels"  # ReLU kernels that fail each gate, then pass

RELU_PROBLEM = '''import torch
import torch.nn as nn

CATEGORY = "activation"


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = {batch}
dim = {dim}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def write_problems(root: Path) -> Path:
    level = root / "level1"
    level.mkdir(parents=True)
    (level / "1_ReLU.py").write_text(RELU_PROBLEM.format(batch=8, dim=4099))
    (level / "2_ReLUWide.py").write_text(RELU_PROBLEM.format(batch=4, dim=16411))
    return root


def answer(stem: str) -> str:
    return f"Here is the kernel.\n\n```python\n{(KERNELS / f'{stem}.py').read_text()}```\n"


def write_script(path: Path, task_ids: list[str], draft: list[str], refine: list[str]) -> Path:
    distill = ('Lessons:\n```json\n[{"kind": "experience", "title": "no torch in forward", '
               '"body": "torch.relu in forward fails the hack gate."}]\n```\n')
    responses = {t: {"draft": [answer(s) for s in draft], "refine": [answer(s) for s in refine],
                     "distill": [distill]} for t in task_ids}
    path.write_text(json.dumps({"label": "agent test script (scripted)", "responses": responses}))
    return path


def build_tiny(backend: str, root):
    """A ``backend`` build of two small ReLU tasks (built and linted for real)."""
    summary = build_benchmark(backend, sources=[write_problems(root / "src")], levels=(1,), out=root / "build",
                              include_bundled=False)
    assert summary.ok == 2, summary
    return load_build(root / "build")
