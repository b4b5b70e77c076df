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
    "host_compute_in_forward": "import numpy as np\nclass M:\n    def forward(self, x):\n        return np.maximum(x, 0)\n",
    "string_evaluation": "def f(x: \"__import__('os').getpid()\"):\n    return x\n",
    "file_and_process_apis": "import torch\ntorch.save({}, '/tmp/x')\n",
}
C_CASES = {
    "c_includes": "#include \"/etc/passwd\"\n",
    "c_inline_asm_and_load_hooks": "__attribute__((constructor)) void f() {}",
    "c_python_api": "void f(PyObject* o) { PyObject_CallObject(o, nullptr); }",
    "c_aten_compute": "at::Tensor f(at::Tensor a) { c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python); return a; }",
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
    code = '// asm("syscall") and PyRun_SimpleString here are only words\n/* __attribute__((constructor)) */\n' \
           'const char* s = "PyObject_Call(f)";\n'
    assert run_native_checks(code) == []


def test_calls_are_judged_on_the_built_object_not_their_names():
    """fork(), clone(), fopen(), std::thread and at::matmul leave symbols: the build tier judges them
    (test_build_policy); the text tier no longer guesses from names, so methods named like them pass."""
    code = ('void f(Tile& t, float* y) { auto u = t.clone(); u.add(1.0f); y[0] = u.read(0) + u.sum(); '
            'long time = 0, clock = 0, random = 0; y[1] = time + clock + random; }\n')
    assert run_native_checks(code) == []


def test_aliases_are_resolved():
    src = "import torch as tt\nclass M:\n    def forward(self, x):\n        return tt.save(x, 'f')\n"
    assert any("torch.save" in f.message for f in run_python_checks(src))


def test_init_may_create_parameters_with_rng():
    src = "import torch\nimport torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.w = nn.Parameter(torch.randn(3))\n"
    assert run_python_checks(src) == []


def test_disabled_checks_are_skipped():
    assert static_findings("import os\n", "float32", disabled=("imports",)) == []


def test_precision_is_left_to_the_float64_comparison():
    code = "void f(float* y) { _Float16 h = 1; y[0] = h; }"
    assert run_native_checks(code, "float32") == [] and run_native_checks(code, "float16") == []


def test_gate_lists_findings_with_lines():
    gate = static_gate("import os\nimport socket\n", "float32")
    assert not gate.passed and "line 1" in gate.reason and "socket" in gate.detail
