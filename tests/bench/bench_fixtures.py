"""Problem files written on the fly for the benchmark-builder tests (a fake KernelBench checkout)."""

from __future__ import annotations

import textwrap
from pathlib import Path

HEADER = "import torch\nimport torch.nn as nn\n\n"


def problem(forward: str, inputs: str = "[torch.randn(batch_size, dim)]", consts: str = "batch_size = 8\ndim = 64",
            init: str = "", init_inputs: str = "[]", extra: str = "") -> str:
    """A KernelBench-format source whose forward body is ``forward`` (x is the first input)."""
    body = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
    init_body = textwrap.indent(textwrap.dedent(init).strip(), " " * 8) if init.strip() else ""
    return (f"{HEADER}{extra}\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"{init_body}\n\n    def forward(self, x, *rest):\n{body}\n\n\n{consts}\n\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init_inputs}\n")


GOOD_RELU = problem("return torch.relu(x)")
GOOD_MATMUL = problem("return x @ rest[0]", inputs="[torch.randn(m, k), torch.randn(k, n)]", consts="m = 48\nk = 40\nn = 33")
CONSTANT = problem("return torch.ones_like(x)")
TINY = problem("return x * 1e-9")
IGNORES_INPUT = problem("return self.w * 1.0", init="self.w = nn.Parameter(torch.randn(8, 64))")
RANDOM = problem("return x + torch.randn_like(x)")
NON_FINITE = problem("return torch.log(x)")  # randn has negatives: NaN
IDENTITY_ON_POSITIVE = problem("return torch.relu(x)", inputs="[torch.rand(batch_size, dim)]")  # KernelBench's ReLU
IDENTITY_ALWAYS = problem("return x * (1.0 + 1e-7)")
TINY_SOFTMAX = problem("return torch.softmax(x, dim=1)", consts="batch_size = 8\ndim = 65536")  # max|out| ~ 1e-4
NOISE_MEAN = problem("return (x - x.mean(dim=1, keepdim=True)).mean(dim=1)", consts="batch_size = 8\ndim = 4096")
MUTATES = problem("x.mul_(2.0)\nreturn x.clone()")
HANGS = problem("import time\nwhile True:\n    time.sleep(0.05)")
CRASHES = problem("import os\nos._exit(3)")


def write_checkout(root: Path, files: dict[str, str]) -> Path:
    """Write ``{"level1/19_ReLU.py": source, ...}`` under root/KernelBench and return root."""
    for rel, text in files.items():
        path = root / "KernelBench" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
