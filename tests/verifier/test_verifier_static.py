"""The static hack policy: each named check fires on its exploit and stays quiet on honest code."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifier.gates.hack import static_findings, static_gate
from verifier.gates.hack_native import NATIVE_CHECKS, run_native_checks
from verifier.gates.hack_python import CHECKS, run_python_checks

EXAMPLE = (Path(__file__).resolve().parents[2] / "verifier" / "backends" / "cpu_example_candidate.txt").read_text()

PY_CASES = {
    "imports": "import os\n",
    "no_try_fallback": "try:\n    pass\nexcept Exception:\n    pass\n",
    "no_reference_reuse": "class ModelNew(Model):\n    pass\n",
    "forbidden_builtins": "f = eval('1')\n",
    "introspection": "class M:\n    def forward(self, x):\n        return x.__class__\n",
    "patching": "import torch as t\nt.relu = None\n",
    "tensor_subclass": "import torch\nclass L(torch.Tensor):\n    pass\n",
    "global_state": "from torch import set_num_threads\nimport torch\ntorch.set_num_threads(1)\n",
    "rng_outside_init": "class M:\n    def forward(self, x):\n        return x.normal_()\n",
    "torch_compute_in_forward": "import torch.nn.functional as G\nclass M:\n    def forward(self, x):\n        return G.gelu(x)\n",
    "nn_module_called": "import torch.nn as nn\nclass M:\n    def __init__(self):\n        self.l = nn.Linear(2, 2)\n    def forward(self, x):\n        return self.l(x)\n",
    "host_compute_in_forward": "import numpy as np\nclass M:\n    def forward(self, x):\n        return np.maximum(x, 0)\n",
    "file_and_process_apis": "import torch\ntorch.save({}, '/tmp/x')\n",
}
C_CASES = {
    "c_processes_and_signals": "void f() { fork(); }",
    "c_threads": "#include <omp.h>\nvoid f() { omp_set_num_threads(8); }",
    "c_files_and_network": "void f() { FILE* p = fopen(\"x\", \"r\"); }",
    "c_includes": "#include \"/etc/passwd\"\n",
    "c_inline_asm_and_load_hooks": "__attribute__((constructor)) void f() {}",
    "c_rng": "int f() { return rand(); }",
    "c_aten_compute": "torch::Tensor f(torch::Tensor x) { return at::matmul(x, x); }",
    "c_precision_downgrade": "void f(float* y) { _Float16 h = 1; y[0] = h; }",
}


def test_every_check_has_a_case():
    assert set(PY_CASES) == set(CHECKS)
    assert set(C_CASES) == set(NATIVE_CHECKS)


@pytest.mark.parametrize("name", sorted(PY_CASES))
def test_python_check_fires(name):
    assert name in {f.check for f in run_python_checks(PY_CASES[name])}


@pytest.mark.parametrize("name", sorted(C_CASES))
def test_native_check_fires(name):
    assert name in {f.check for f in run_native_checks(C_CASES[name])}


def test_scaffold_example_is_clean():
    assert static_findings(EXAMPLE, "float32") == []


def test_words_in_comments_and_strings_do_not_count():
    code = '// fork() and std::thread here are only words\n/* system("x") */\nconst char* s = "kill(0, 9)";\n'
    assert run_native_checks(code) == []


def test_aliases_are_resolved():
    src = "import torch as tt\nclass M:\n    def forward(self, x):\n        return tt.sigmoid(x)\n"
    assert any("torch.sigmoid" in f.message for f in run_python_checks(src))


def test_init_may_create_parameters_with_rng():
    src = "import torch\nimport torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.w = nn.Parameter(torch.randn(3))\n"
    assert run_python_checks(src) == []


def test_disabled_checks_are_skipped():
    assert static_findings("import os\n", "float32", disabled=("imports",)) == []


def test_half_precision_only_flagged_for_float32_tasks():
    code = "void f(float* y) { _Float16 h = 1; y[0] = h; }"
    assert run_native_checks(code, "float16") == []


def test_gate_lists_findings_with_lines():
    gate = static_gate("import os\nimport socket\n", "float32")
    assert not gate.passed and "line 1" in gate.reason and "socket" in gate.detail
