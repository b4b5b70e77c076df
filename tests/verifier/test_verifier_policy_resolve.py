"""The resolution logic under the Python policy: what names denote (resolver) and which functions
run per call (phases), on small candidates read from the AST."""

from __future__ import annotations

import ast

import pytest

from verifier.gates.hack_py_context import PyContext
from verifier.gates.hack_python import run_python_checks

HEAD = "import math\nimport functools\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" \
       "from verifier.cpu_native import load_c\n"


def _ctx(body: str) -> PyContext:
    return PyContext.build(HEAD + body)


def _expr(ctx: PyContext, text: str, occurrence: int = 0) -> ast.AST:
    """The ``occurrence``-th expression node whose source text is ``text``."""
    source = ast.unparse
    found = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.expr) and source(n) == text]
    return found[occurrence]


def _kinds(ctx: PyContext, text: str, occurrence: int = 0) -> set[tuple[str, str]]:
    return {(t.kind, t.name) for t in ctx.resolve(_expr(ctx, text, occurrence))}


def _fn(ctx: PyContext, name: str) -> ast.AST:
    return next(n for n in ast.walk(ctx.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)


def _per_call(ctx: PyContext, name: str) -> bool:
    return ctx.phases.runs_per_call(_fn(ctx, name))


# -- resolver ----------------------------------------------------------------------------------

def test_import_aliases_resolve_to_dotted_names():
    ctx = _ctx("from torch import relu as r\nimport numpy as np\nA = (F.gelu, r, np.prod, math.prod)\n")
    assert _kinds(ctx, "F.gelu") == {("torch", "torch.nn.functional.gelu")}
    assert _kinds(ctx, "r") == {("torch", "torch.relu")}
    assert _kinds(ctx, "np.prod") == {("module", "numpy.prod")}
    assert _kinds(ctx, "math.prod") == {("module", "math.prod")}


def test_module_constants_and_containers_are_followed():
    ctx = _ctx("RELU = torch.relu\nOPS = {'r': RELU, 'n': None}\ndef f(x):\n    return OPS['r'](x)\n")
    assert ("torch", "torch.relu") in _kinds(ctx, "OPS['r']")


def test_self_attributes_follow_every_store():
    ctx = _ctx("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
               "        self.act = F.relu\n        self.lin = nn.Linear(2, 2)\n"
               "    def forward(self, x):\n        return self.act(self.lin(x))\n")
    assert ("torch", "torch.nn.functional.relu") in _kinds(ctx, "self.act", 1)
    assert ("torch_obj", "torch.nn.Linear") in _kinds(ctx, "self.lin", 1)


def test_helper_returning_a_loader_result_is_native():
    ctx = _ctx("def _build():\n    return load_c('void f(){}', {})\nlib = _build()\nlib.relu\n")
    assert _kinds(ctx, "lib.relu") == {("native", "")}


def test_parameters_follow_their_call_sites():
    ctx = _ctx("class K:\n    def __init__(self, library):\n        self.library = library\n"
               "k = K(load_c('void f(){}', {}))\nk.library\n")
    assert _kinds(ctx, "k.library") == {("native", "")}


def test_parameters_of_escaping_functions_stay_unknown():
    ctx = _ctx("def h(t):\n    return t\nALIAS = h\n")
    kinds = _kinds(ctx, "t", 0)
    assert {k for k, _ in kinds} == {"unknown"}


def test_forward_inputs_are_tensors():
    ctx = _ctx("class M(nn.Module):\n    def forward(self, x):\n        return x\n")
    assert ("tensor", "") in _kinds(ctx, "x")


def test_shape_arithmetic_is_a_plain_value():
    ctx = _ctx("class M(nn.Module):\n    def forward(self, x):\n        y = torch.empty(2, 3)\n"
               "        n = y.shape[0] * y.size(1) + math.prod(y.shape)\n        return n\n")
    assert _kinds(ctx, "n", 0) == {("value", "")}


def test_super_reaches_a_torch_base():
    ctx = _ctx("class M(nn.ReLU):\n    def forward(self, x):\n        return super().forward(x)\n")
    assert ("torch_obj", "torch.nn.ReLU.forward") in _kinds(ctx, "super().forward")


def test_candidate_methods_resolve_along_bases():
    ctx = _ctx("class B:\n    def post(self, t):\n        return t\nclass M(B):\n    def go(self, x):\n"
               "        return self.post(x)\n")
    assert ("func", "post") in _kinds(ctx, "self.post")


def test_super_with_the_class_named_is_super():
    ctx = _ctx("class M(nn.ReLU):\n    def forward(self, x):\n        return super(M, self).forward(x)\n")
    assert ("torch_obj", "torch.nn.ReLU.forward") in _kinds(ctx, "super(M, self).forward")


def test_global_declarations_bind_in_the_module():
    ctx = _ctx("def grab():\n    global M\n    M = torch\ngrab()\nM.relu\n")
    assert _kinds(ctx, "M.relu") == {("torch", "torch.relu")}


def test_nonlocal_declarations_bind_in_the_enclosing_function():
    ctx = _ctx("def outer():\n    f = None\n    def inner():\n        nonlocal f\n        f = torch.relu\n"
               "    inner()\n    return f\nR = outer()\n")
    assert ("torch", "torch.relu") in _kinds(ctx, "R", 0)


def test_name_cycles_terminate():
    ctx = _ctx("a = b = None\na = b\nb = a\nb = torch.relu\n")
    assert ("torch", "torch.relu") in _kinds(ctx, "a", 1)


# -- phases ------------------------------------------------------------------------------------

PHASES = HEAD + """
def build():
    return load_c("void f(){}", {})
def table(n):
    return torch.arange(n).cos()
def shared(t):
    return t
def escaped(t):
    return t
def unused(t):
    return torch.relu(t)
def gen():
    yield 1
lib = build()
T = table(4)
CB = escaped
G = gen()
class K:
    def __init__(self):
        self.v = 1
    def __add__(self, o):
        return o
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = self._init_table()
        shared(T)
        self.k = K()
    def _init_table(self):
        return T
    def helper(self, x):
        return shared(x)
    def forward(self, x):
        return self.helper(x)
"""


@pytest.mark.parametrize("name,per_call", [
    ("build", False), ("table", False), ("_init_table", False), ("__init__", False), ("unused", False),
    ("forward", True), ("helper", True), ("shared", True), ("escaped", True), ("gen", True), ("__add__", True),
])
def test_phase_of_each_function(name, per_call):
    assert _per_call(PyContext.build(PHASES), name) is per_call


def test_classes_built_per_call_run_their_init_per_call():
    ctx = _ctx("class K:\n    def __init__(self):\n        self.v = 1\nclass J:\n    def __init__(self):\n"
               "        self.v = 2\nj = J()\ndef forward(x):\n    return K()\nF2 = forward\n")
    assert _per_call(ctx, "__init__") and ctx.phases.runs_per_call(_fn_nth(ctx, "__init__", 0))
    assert not ctx.phases.runs_per_call(_fn_nth(ctx, "__init__", 1))


def test_annotations_and_isinstance_do_not_make_init_per_call():
    ctx = _ctx("class K:\n    def __init__(self):\n        self.t = torch.arange(3).cos()\nk = K()\n"
               "def forward(x: K, y: 'K') -> K:\n    return isinstance(x, K)\nF2 = forward\n")
    assert not _per_call(ctx, "__init__")


def test_a_shadowed_isinstance_is_a_use_like_any_other():
    ctx = _ctx("class K:\n    def __init__(self):\n        self.v = 1\nk = K()\nSTORE = []\n"
               "def isinstance(a, b):\n    STORE.append(b)\nisinstance(k, K)\n")
    assert _per_call(ctx, "__init__")


@pytest.mark.parametrize("call", ["super().__init__()", "super(M, self).__init__()", "nn.Module.__init__(self)"])
def test_init_naming_its_class_in_super_stays_import_time(call):
    ctx = _ctx(f"class M(nn.Module):\n    def __init__(self, n):\n        {call}\n        self.ln = nn.LayerNorm(n)\n"
               "    def forward(self, x):\n        return x\n")
    assert not _per_call(ctx, "__init__")


def test_type_of_an_object_makes_every_init_per_call():
    ctx = _ctx("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
               "    def forward(self, x):\n        return type(self)()\n")
    assert _per_call(ctx, "__init__")


def test_lambda_consumed_at_import_is_import_time():
    ctx = _ctx("N = functools.reduce(lambda a, b: a * torch.tensor(b).item(), [1, 2], 1)\n")
    lam = next(n for n in ast.walk(ctx.tree) if isinstance(n, ast.Lambda))
    assert not ctx.phases.runs_per_call(lam)


def test_decorated_helpers_run_per_call():
    ctx = _ctx("def deco(f):\n    return f\n@deco\ndef h():\n    return 1\nX = h()\n")
    assert _per_call(ctx, "h") and _per_call(ctx, "deco")


def test_transparent_decorators_keep_import_time():
    ctx = _ctx("@functools.lru_cache(maxsize=None)\ndef h():\n    return torch.arange(3).exp()\nX = h()\n")
    assert not _per_call(ctx, "h")


def _fn_nth(ctx: PyContext, name: str, index: int) -> ast.AST:
    return [n for n in ast.walk(ctx.tree) if isinstance(n, ast.FunctionDef) and n.name == name][index]


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("source", ["def f(:\n", "x = 1\x00\n", "class ModelNew(\n"])
def test_invalid_python_yields_nothing_and_never_raises(source):
    assert run_python_checks(source) == []  # the compile gate reports it, with its line


def test_text_no_compiler_can_read_is_rejected_with_a_reason():
    findings = run_python_checks('x = "\udc80"\n')
    assert [f.check for f in findings] == ["policy"] and "UTF-8" in findings[0].message


def test_long_expressions_are_analysed():
    terms = " + ".join(["np.tanh(x)"] * 600)
    source = HEAD + f"import numpy as np\nclass M(nn.Module):\n    def forward(self, x):\n        return {terms}\n"
    assert {f.check for f in run_python_checks(source)} == {"host_compute_in_forward"}


def test_too_deep_to_analyse_fails_closed():
    chain = "a0 = torch.relu\n" + "".join(f"a{i} = a{i - 1}\n" for i in range(1, 1500))
    source = HEAD + chain + "class M(nn.Module):\n    def forward(self, x):\n        return a1499(x)\n"
    findings = run_python_checks(source)
    assert [f.check for f in findings] == ["policy"] and "simplify" in findings[0].message


def test_missing_modelnew_is_analysed_without_error():
    assert run_python_checks(HEAD + "class Other(nn.Module):\n    pass\n") == []


def test_dynamic_attribute_access_names_its_line():
    findings = run_python_checks(HEAD + "class M(nn.Module):\n    def forward(self, x):\n"
                                 "        return getattr(torch, 're' + 'lu')(x)\n")
    assert any(f.check == "forbidden_builtins" and f.line == 9 for f in findings)
